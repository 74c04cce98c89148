import Simulation

SimCommand.commandLineMain()
