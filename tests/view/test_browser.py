"""What a person would check in the browser: headless Debian Chromium opens report.html of real runs.

Screenshots land in test-artifacts/ at the repository root.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from tests.view.conftest import Page, journal_nodes


def test_the_tree_page_draws_every_node_of_the_search_tree(
    page: Page, runs: dict[str, Path], written: Callable[[str], Path]
) -> None:
    tab = page.open(written("blocksworld-mcts"), "#/tree/1")
    canvas = tab.locator("#tree-canvas")
    expected = len(journal_nodes(runs["blocksworld-mcts"], 1))
    assert canvas.get_attribute("data-node-count") == str(expected)
    assert canvas.get_attribute("data-visible-count") == str(expected)  # a small tree is drawn whole
    assert int(canvas.get_attribute("data-drawn-count") or 0) > 0
    assert tab.evaluate("litsView.tree.nodes.every(n => litsView.tree.isShown(n.id))")
    page.screenshot("tree-blocksworld-mcts")


def test_clicking_a_node_shows_its_details_and_model_calls(page: Page, written: Callable[[str], Path]) -> None:
    tab = page.open(written("blocksworld-mcts"), "#/tree/0")
    node_id = tab.evaluate("litsView.tree.nodes.find(n => n.depth === 1 && n.visits > 0).id")
    page.click_node(node_id)
    assert tab.locator("#details-title").inner_text() == f"node {node_id}"
    details = tab.locator("#details").inner_text()
    for field in ("fast reward", "reward", "visits", "Q", "depth", "action", "Model calls"):
        assert field in details
    assert tab.locator("#node-calls tr").count() > 1  # header + the calls that expanded this node
    page.screenshot("tree-node-details")


def test_the_selected_path_is_marked(page: Page, runs: dict[str, Path], written: Callable[[str], Path]) -> None:
    tab = page.open(written("blocksworld-bfs"), "#/tree/0")
    path = [n["id"] for n in json.loads((runs["blocksworld-bfs"] / "paths" / "0.json").read_text())]
    assert tab.evaluate("litsView.tree.pathIds()") == sorted(path)
    page.click_node(path[-1])
    assert "on the selected path" in tab.locator("#details").inner_text()


def test_the_run_page_lists_the_instances_and_links_to_their_trees(
    page: Page, written: Callable[[str], Path], reports: dict[str, dict[str, Any]]
) -> None:
    tab = page.open(written("mapeval-mcts"))
    rows = tab.locator("#instances tr[data-idx]")
    assert rows.count() == len(reports["mapeval-mcts"]["instances"])
    assert "accuracy" in tab.locator("#run-cards").inner_text()
    assert tab.locator(".chart svg").count() >= 3  # calls and tokens by component, phase, depth; in flight
    page.screenshot("run-page-mapeval")
    rows.first.locator("a").click()
    tab.wait_for_function("window.litsView.page === 'tree' && document.querySelector('#tree-canvas')")
    assert tab.locator("#tree-canvas").get_attribute("data-node-count") == str(
        reports["mapeval-mcts"]["instances"][0]["nodes"]
    )


def test_a_chain_run_is_drawn_as_a_path(page: Page, runs: dict[str, Path], written: Callable[[str], Path]) -> None:
    tab = page.open(written("math500-cot"), "#/tree/0")
    steps = json.loads((runs["math500-cot"] / "results" / "0.json").read_text())["final_state"]["steps"]
    assert tab.locator("#tree-canvas").get_attribute("data-node-count") == str(len(steps) + 1)
    assert tab.evaluate("litsView.tree.pathIds().length") == len(steps) + 1
    assert tab.evaluate("litsView.tree.nodes.every(n => litsView.tree.isShown(n.id))")  # the whole chain, not its start
    tab.locator("#iteration").fill("2")  # stepping back: the chain after its second step
    assert tab.evaluate("litsView.tree.nodes.filter(n => litsView.tree.isShown(n.id)).length") == 3
    tab.evaluate("litsView.tree.select(1)")
    assert "step 1" in tab.locator("#details-title").inner_text()
    page.screenshot("tree-math500-chain")


def test_a_steps_prompt_and_reply_are_shown_when_the_run_logged_them(
    page: Page, written: Callable[[str], Path]
) -> None:
    tab = page.open(written("mapeval-react"), "#/tree/0")
    tab.evaluate("litsView.tree.select(1)")
    calls = tab.locator("#node-calls")
    calls.locator("summary", has_text="prompt and reply").first.click()
    shown = calls.inner_text()
    assert "PROMPT" in shown and "REPLY" in shown
    page.screenshot("tree-mapeval-prompt-and-reply")


def test_stepping_back_through_iterations_shows_the_tree_as_it_was(
    page: Page, runs: dict[str, Path], written: Callable[[str], Path]
) -> None:
    results = sorted((runs["blocksworld-mcts"] / "results").glob("*.json"))
    longest = max(results, key=lambda p: json.loads(p.read_text())["iterations"] or 0).stem  # the most to step through
    tab = page.open(written("blocksworld-mcts"), f"#/tree/{longest}")
    last = int(tab.locator("#iteration").get_attribute("max") or 0)
    assert last >= 2
    tab.locator("#iteration").fill("1")  # after the first iteration
    assert tab.evaluate("litsView.tree.valueOf(0, 'visits')") == 1
    first_leaf = tab.evaluate("litsView.tree.tree.paths[0]")
    rollout = tab.evaluate("litsView.tree.rolloutIds")
    assert first_leaf in rollout and 0 in rollout  # that iteration's rollout, root to leaf, is drawn
    drawn_then = int(tab.locator("#tree-canvas").get_attribute("data-drawn-count") or 0)
    tab.locator("#iteration").fill(str(last))
    assert tab.evaluate("litsView.tree.valueOf(0, 'visits')") == last
    assert int(tab.locator("#tree-canvas").get_attribute("data-drawn-count") or 0) > drawn_then


def test_a_run_without_instances_yet_opens_without_errors(page: Page, runs: dict[str, Path], tmp_path: Path) -> None:
    import shutil

    from lits.view.html import write_report

    run = tmp_path / "starting"
    run.mkdir()
    shutil.copyfile(runs["blocksworld-bfs"] / "config.json", run / "config.json")
    tab = page.open(write_report(run))
    assert tab.locator("#instances tr[data-idx]").count() == 0
    assert "no calls recorded" in tab.locator("main").inner_text()


def test_every_domain_s_pages_open_without_errors(
    page: Page, written: Callable[[str], Path], reports: dict[str, dict[str, Any]]
) -> None:
    for name in ("crosswords-mcts", "mapeval-react", "gsm8k-rap", "blocksworld-chain"):
        page.open(written(name))
        for idx in reports[name]["trees"]:
            tab = page.open(written(name), f"#/tree/{idx}")
            assert tab.locator("#tree-canvas").get_attribute("data-node-count") == str(
                len(reports[name]["trees"][idx]["nodes"])
            )
            assert tab.evaluate("litsView.tree.nodes.every(n => litsView.tree.isShown(n.id))"), (name, idx)


def test_a_large_tree_opens_collapsed_around_the_selected_path(
    page: Page, tmp_path: Path, synthetic_run: Callable[..., Path]
) -> None:
    from lits.view.html import write_report

    run = synthetic_run(tmp_path / "large", nodes=4000)
    tab = page.open(write_report(run), "#/tree/0")
    canvas = tab.locator("#tree-canvas")
    assert canvas.get_attribute("data-node-count") == "4000"
    visible = int(canvas.get_attribute("data-visible-count") or 0)
    assert 0 < visible <= 1500 + 50
    assert tab.evaluate("litsView.tree.pathIds().every(id => litsView.tree.screenPos(id) !== null)")
    tab.get_by_role("button", name="expand all").click()
    assert canvas.get_attribute("data-visible-count") == "4000"


def test_invalid_steps_and_duplicate_proposals_are_visible(
    page: Page, tmp_path: Path, synthetic_run: Callable[..., Path]
) -> None:
    from lits.view.html import write_report

    run = synthetic_run(
        tmp_path / "marks", nodes=30, invalid=(7,), proposals=(("step 1", False), ("step 1", True), ("step 2", False))
    )
    tab = page.open(write_report(run), "#/tree/0")
    cards = tab.locator(".cards").inner_text()
    assert "1 / 3" in cards and "duplicate proposals" in cards and "invalid steps" in cards
    tab.locator("#proposals").evaluate("t => t.closest('details').open = true")
    assert tab.locator("#proposals tr.dup").count() == 1
    page.click_node(7)
    details = tab.locator("#details").inner_text()
    assert "invalid step" in details and "that move is not allowed here" in details


def test_a_reload_comes_back_to_the_selected_node(page: Page, written: Callable[[str], Path]) -> None:
    tab = page.open(written("blocksworld-mcts"), "#/tree/0")
    tab.evaluate("litsView.tree.select(2)")
    assert tab.evaluate("location.hash") == "#/tree/0/node/2"
    tab.reload()
    tab.wait_for_function("window.litsView.page === 'tree' && window.litsView.tree.selected >= 0")
    assert tab.locator("#details-title").inner_text() == "node 2"


def test_the_served_page_draws_the_run_and_offers_to_re_read_it(page: Page, runs: dict[str, Path]) -> None:
    import threading

    from lits.view.serve import make_server

    server = make_server(runs["gsm8k-rap"], 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        tab = page.page
        tab.goto(f"http://127.0.0.1:{server.server_address[1]}/#/tree/0")
        tab.wait_for_function(
            "document.querySelector('#tree-canvas') && document.querySelector('#tree-canvas').dataset.rendered === '1'"
        )
        assert tab.locator("#auto-refresh").count() == 1
        assert int(tab.locator("#tree-canvas").get_attribute("data-node-count") or 0) > 1
    finally:
        page.page.goto("about:blank")  # the page's re-reads stop before the server does (no reset connection)
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_double_click_collapses_wheel_zooms_and_drag_pans(page: Page, written: Callable[[str], Path]) -> None:
    tab = page.open(written("blocksworld-mcts"), "#/tree/1")
    canvas = tab.locator("#tree-canvas")
    root = tab.evaluate("litsView.tree.screenPos(0)")
    tab.mouse.dblclick(root["x"], root["y"])
    assert canvas.get_attribute("data-visible-count") == "1"
    stays = tab.evaluate("litsView.tree.screenPos(0)")  # the collapsed node keeps its place on screen
    assert abs(stays["x"] - root["x"]) < 0.5 and abs(stays["y"] - root["y"]) < 0.5
    tab.mouse.dblclick(root["x"], root["y"])
    assert canvas.get_attribute("data-visible-count") == canvas.get_attribute("data-node-count")
    box = canvas.bounding_box()
    assert box is not None
    before = tab.evaluate("[litsView.tree.scale, litsView.tree.tx, litsView.tree.ty]")
    tab.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    tab.mouse.wheel(0, -400)
    assert tab.evaluate("litsView.tree.scale") > before[0]
    moved_from = tab.evaluate("[litsView.tree.tx, litsView.tree.ty]")
    tab.mouse.down()
    tab.mouse.move(box["x"] + box["width"] / 2 + 80, box["y"] + box["height"] / 2 + 40, steps=4)
    tab.mouse.up()
    after = tab.evaluate("[litsView.tree.tx, litsView.tree.ty]")
    assert after[0] == moved_from[0] + 80 and after[1] == moved_from[1] + 40
