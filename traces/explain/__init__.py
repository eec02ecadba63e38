"""Explaining a trace: the narration, the timeline, and the text, HTML and PNG views."""
