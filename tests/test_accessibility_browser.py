"""Contrast and navigation of the three apps as the suite serves them (issue 28 item 7), in real Chromium.

Every visible piece of text on the index page and on each app's first page is measured from the rendered CSS:
its colour (with the opacity of it and its ancestors) blended over the first opaque background behind it, the
WCAG 2.1 contrast ratio against that background, and the level AA asks (4.5:1; 3:1 for text of 24 px, or 18.66 px
bold). Gradio's Soft theme alone fails (labels 3.6:1, helper text 2.5:1, the primary button 4.47:1); the apps'
theme and CSS (:data:`biastest.ui.common.THEME`, :data:`~biastest.ui.common.CSS`) must not. Each app also links
back to the index page, and no status is told by an emoji alone (a stock Chromium without an emoji font draws
boxes).
"""

from __future__ import annotations

import re

import pytest

from biastest.ui.common import INDEX_LINK
from tests.browser_helpers import chromium_browser, served_apps

pytestmark = pytest.mark.browser

#: The contrast of every visible text element: ``[{text, ratio, need, color, background}]``.
CONTRAST_JS = r"""
() => {
  const parse = c => { const m = c.match(/rgba?\(([^)]+)\)/); if (!m) return null;
    const p = m[1].split(',').map(s => parseFloat(s));
    return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1}; };
  const lum = c => {
    const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b); };
  const blend = (fg, bg) => ({r: fg.r * fg.a + bg.r * (1 - fg.a), g: fg.g * fg.a + bg.g * (1 - fg.a),
                              b: fg.b * fg.a + bg.b * (1 - fg.a), a: 1});
  const background = el => { const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c.a > 0) layers.push(c);
      if (c && c.a >= 1) break; }
    let bg = {r: 255, g: 255, b: 255, a: 1};
    for (let i = layers.length - 1; i >= 0; i--) bg = blend(layers[i], bg);
    return bg; };
  const opacity = el => { let o = 1;
    for (let e = el; e; e = e.parentElement) o *= parseFloat(getComputedStyle(e).opacity);
    return o; };
  const out = [], seen = new Set();
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode, el = node.parentElement;
    if (!node.textContent.trim() || seen.has(el)) continue;
    seen.add(el);
    const box = el.getBoundingClientRect(), cs = getComputedStyle(el);
    if (box.width === 0 || box.height === 0 || cs.visibility === 'hidden' || cs.display === 'none') continue;
    const bg = background(el), c = parse(cs.color), fg = blend({...c, a: c.a * opacity(el)}, bg);
    const ratio = (Math.max(lum(fg), lum(bg)) + 0.05) / (Math.min(lum(fg), lum(bg)) + 0.05);
    const size = parseFloat(cs.fontSize), bold = parseInt(cs.fontWeight) >= 700;
    const need = (size >= 24 || (bold && size >= 18.66)) ? 3 : 4.5;
    out.push({text: node.textContent.trim().slice(0, 60), ratio: ratio, need: need,
              color: cs.color, background: `rgb(${Math.round(bg.r)}, ${Math.round(bg.g)}, ${Math.round(bg.b)})`});
  }
  return out;
}
"""

#: Pictographs and dingbats that a stock Chromium without an emoji font may draw as boxes.
EMOJI = re.compile("[\u2600-\u27bf\U0001f000-\U0001faff\ufe0f]")


def _contrast_failures(page) -> list[dict]:
    found = page.evaluate(CONTRAST_JS)
    assert len(found) >= 5, found  # the page was measured, not an empty frame
    return [f for f in found if f["ratio"] < f["need"]]


def _emoji_only(page) -> list[str]:
    texts = page.evaluate("() => Array.from(document.querySelectorAll('body *')).filter(e => e.children.length === 0 "
                          "&& e.offsetParent !== null).map(e => e.textContent.trim()).filter(t => t)")
    return [t for t in texts if EMOJI.search(t) and not re.search(r"[A-Za-z]{2}", EMOJI.sub("", t))]


def test_every_text_of_the_index_and_the_apps_reads_at_aa_contrast_and_links_back():
    with served_apps() as base, chromium_browser() as browser:
        ctx = browser.new_context(viewport={"width": 1280, "height": 1000})
        page = ctx.new_page()
        page.goto(base)
        assert _contrast_failures(page) == []
        for key, first_tab in (("gpt", "1 · Bias specification"), ("vqa", "1 · Bias specification"),
                               ("psychophysics", "1 · Bias specification")):
            page.goto(f"{base}{key}/")
            page.get_by_role("tab", name=first_tab).wait_for(timeout=60_000)
            page.wait_for_timeout(500)  # the theme's stylesheet applies with the first render
            assert _contrast_failures(page) == [], key
            assert _emoji_only(page) == [], key
            link = page.locator("#index-link a")
            assert link.inner_text().strip() == "← All biastest apps" and link.get_attribute("href") == "../"
            link.click()
            page.wait_for_url(base, timeout=30_000)
            assert page.locator("a.card").count() == 3
        ctx.close()


def test_an_app_alone_has_no_link_to_an_index_it_does_not_have():
    import gradio as gr

    from biastest.ui import psychophysics

    demo = psychophysics.build_demo()
    assert isinstance(demo, gr.Blocks)
    assert not any(getattr(b, "elem_id", None) == "index-link" for b in demo.blocks.values())
    served = psychophysics.build_demo(index_link=True)
    assert [b.value for b in served.blocks.values() if getattr(b, "elem_id", None) == "index-link"] == [INDEX_LINK]
