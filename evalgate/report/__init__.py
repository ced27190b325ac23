"""Reports rendered from a results file: Markdown (job summary and PR comment) and JUnit XML."""
