from swerl_cli.cli import main

main()
