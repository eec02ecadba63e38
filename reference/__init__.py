"""rocketspec reference."""
