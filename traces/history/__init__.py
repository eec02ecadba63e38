"""rocketspec.traces.history: the adapters that read a produce/consume history, from a trace
(from_trace), from RocketMQ message-trace bodies (msgtrace) or from an OpenChaos history
(openchaos), into one model (model); sources detects the format and streams it. The judge of
the guarantees is the spec's (rocketspec.spec.history), which imports these and never the
reverse."""
