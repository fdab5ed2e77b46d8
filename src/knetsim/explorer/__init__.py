"""The connectivity explorer: the matrix answer, explanations and the service map in a browser page."""
