"""rocketspec traces."""
