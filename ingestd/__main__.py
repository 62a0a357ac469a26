from ingestd.cli import main

main()
