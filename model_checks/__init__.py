"""rocketspec model_checks."""
