import CLI

LanchatCLI.main()
