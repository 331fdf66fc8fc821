"""tp.compile: capture a function as a graph, rewrite it with passes, generate fast code."""
