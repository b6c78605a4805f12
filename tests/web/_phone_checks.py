"""What a phone crops or breaks on a page, measured in Chromium as the page is drawn."""

from __future__ import annotations

from typing import Any

# Elements reaching past the viewport's right edge (or wider than it), visible ones only:
# what makes a phone scroll sideways or crop.
_TOO_WIDE = """() => {
  const width = document.documentElement.clientWidth;
  return [...document.querySelectorAll('body *')].filter(e => {
    const r = e.getBoundingClientRect();
    const style = getComputedStyle(e);
    const hidden = r.width === 0 || style.visibility === 'hidden' || style.position === 'absolute'
      && (r.right < 0 || r.width <= 1);
    return !hidden && (r.right > width + 0.5 || r.width > width + 0.5);
  }).slice(0, 10).map(e => {
    const right = Math.round(e.getBoundingClientRect().right);
    return `${e.tagName.toLowerCase()}.${e.className} ${right}px`;
  });
}"""


# Words of the page's text drawn across two lines (broken inside: "New listin g"), found
# from each word's rendered boxes; a word with a hyphen or a slash may break there, so only
# the pieces between them count.
_BROKEN_WORDS = """(root) => {
  const broken = [];
  const walker = document.createTreeWalker(document.querySelector(root), NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    for (const m of node.textContent.matchAll(/[^\\s\\-\\/]+/g)) {
      const range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const lines = new Set([...range.getClientRects()].filter(r => r.width > 0)
        .map(r => Math.round(r.top)));
      if (lines.size > 1) broken.push(m[0]);
    }
  }
  return broken.slice(0, 10);
}"""


# Table cells drawn as cards on a phone (`display: flex`, the label from ::before on the left):
# the value must be one flex item, or `space-between` spreads its pieces across the card and
# a number lands in the middle ("Sold      0      ").
_LOOSE_VALUES = """() => [...document.querySelectorAll('.table td[data-label]')].filter(td => {
  if (getComputedStyle(td).display !== 'flex') return false;
  const items = [...td.childNodes].filter(n => n.nodeType === Node.TEXT_NODE
    ? n.textContent.trim() !== ''
    : n.nodeType === Node.ELEMENT_NODE && getComputedStyle(n).display !== 'none');
  return items.length > 1;
}).slice(0, 10).map(td => `${td.dataset.label}: ${td.textContent.trim()}`)"""


def too_wide(page: Any) -> list[str]:
    """The visible elements wider than the viewport or reaching past it (none, ideally)."""
    found: list[str] = page.evaluate(_TOO_WIDE)
    return found


def broken_words(page: Any, root: str = "main") -> list[str]:
    """The words under `root` that the page draws broken across two lines (none, ideally)."""
    found: list[str] = page.evaluate(_BROKEN_WORDS, root)
    return found


def loose_values(page: Any) -> list[str]:
    """The card cells whose value is split into several pieces (none, ideally)."""
    found: list[str] = page.evaluate(_LOOSE_VALUES)
    return found
