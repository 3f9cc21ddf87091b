"""Online evaluation: runner, span processor, emitter, exporters, configure() and the wire."""
