"""Reports: the paper's tables (Markdown, CSV, LaTeX) and results.json from the artifacts' numbers."""
