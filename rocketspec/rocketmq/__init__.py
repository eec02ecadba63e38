"""RocketMQ's own facts, written once: release profiles, config keys and defaults, the
delay table, the retry-level rule and topic names, and the filter language.

Both independent readings of RocketMQ (the spec and the reference) import these; this
package imports neither, only `rocketspec`'s base modules.
"""
