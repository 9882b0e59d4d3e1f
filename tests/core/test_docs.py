"""The docs hold together: every link between the README and docs/ reaches a file and a heading,
every page of docs/ is linked from the README, and every `docs/<PAGE>.md §N` the code cites is a
section of that page."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
CITATION = re.compile(r"docs/([A-Z]+\.md) §(\d+)")


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
    return {anchor(m) for m in re.findall(r"^#+ (.+)$", text, re.MULTILINE)}


def links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
    return [target for target in LINK.findall(text) if not re.match(r"[a-z]+:", target)]


def test_every_link_reaches_a_file_and_a_heading():
    broken = []
    for page in PAGES:
        for target in links(page):
            path, _, fragment = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif fragment and file.suffix == ".md" and fragment not in anchors(file):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken


def test_the_readme_links_every_page_of_the_docs_and_stays_short():
    readme = ROOT / "README.md"
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in links(readme)}
    assert not [page.name for page in DOCS.glob("*.md") if page.resolve() not in linked]
    assert len(readme.read_text().splitlines()) <= 300


def test_every_cited_section_exists():
    sources = [p for folder in ("cloth_addon", "tests", "tools") for p in (ROOT / folder).rglob("*.py")]
    sources += PAGES
    missing = []
    for source in sources:
        for page, number in CITATION.findall(source.read_text()):
            headings = re.findall(r"^## (\d+)\. ", (DOCS / page).read_text(), re.MULTILINE)
            if number not in headings:
                missing.append(f"{source.relative_to(ROOT)}: docs/{page} §{number}")
    assert not missing


def test_the_anchor_rule_matches_githubs():
    assert anchor("4. Implicit Euler as a minimisation (`solver=\"fast_mass_spring\"`, the default)") == \
        "4-implicit-euler-as-a-minimisation-solverfast_mass_spring-the-default"
    assert anchor("The paper's experiments") == "the-papers-experiments"
