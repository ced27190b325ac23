// The words Mastra's completeness scorer extracts from a text, run over compromise's own build
// (compromise.js beside this file, loaded first: it defines `nlp`). normalizeString and
// extractElements are @mastra/evals 1.10.2's, verbatim (src/scorers/code/completeness/index.ts);
// the scorer calls extractElements(nlp(text.trim())) on the input and on the output.
function normalizeString(str) {
	return str.normalize("NFD").replace(/[\u0300-\u036f]/g, "").toLowerCase();
}
function extractElements(doc) {
	const nouns = doc.nouns().out("array") || [];
	const verbs = doc.verbs().toInfinitive().out("array") || [];
	const topics = doc.topics().out("array") || [];
	const terms = doc.terms().out("array") || [];
	const cleanAndSplitTerm = (term) => {
		return normalizeString(term).replace(/([a-z])([A-Z])/g, "$1 $2").replace(/[^a-z0-9]+/g, " ").trim().split(/\s+/).filter((word) => word.length > 0);
	};
	const processedTerms = [
		...nouns.flatMap(cleanAndSplitTerm),
		...verbs.flatMap(cleanAndSplitTerm),
		...topics.flatMap(cleanAndSplitTerm),
		...terms.flatMap(cleanAndSplitTerm)
	];
	return [...new Set(processedTerms)];
}
function evalgateCompletenessElements(text) {
	return extractElements(nlp(text.trim()));
}
