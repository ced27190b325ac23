"""Reports rendered from a results file: Markdown (job summary and PR comment), JUnit XML and the HTML page."""
