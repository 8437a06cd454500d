"""Rendering: plots (SVG) and the HTML report."""
