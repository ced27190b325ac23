"""The GitHub Action's adapter: settings from the environment, workflow commands, the sticky comment."""
