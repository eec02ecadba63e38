"""rocketspec spec."""
