"""See the search: ``lits view`` (one offline HTML page per run) and ``lits compare --plot``.

model.py builds the page's data from a run dir (tree.py: trees and chains,
calls.py: model calls and cost pictures); html.py renders the page from
static/ (our own JS and CSS, inlined); serve.py serves it on 127.0.0.1;
plot.py draws the compute-matched comparison.
"""
