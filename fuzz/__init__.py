"""Coverage-guided fuzz harnesses (atheris) for the sans-I/O core; see README.md here."""
