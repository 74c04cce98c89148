import Bench

BenchMain.run()
