"""rocketspec conformance."""
