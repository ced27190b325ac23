"""The Docker Action's entrypoint (see action.yml and evalgate/github/main.py)."""
from evalgate.github.main import main

main()
