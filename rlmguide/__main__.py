from rlmguide.cli import main

main()
