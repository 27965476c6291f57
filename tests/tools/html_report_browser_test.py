#!/usr/bin/python3
"""Browser test of `mlusim report`: the HTML page opened in headless Chromium (Debian's `chromium`)
renders without JavaScript errors, with nothing injected from the inputs; zooming the timeline and
sorting a table work; and the page it paints is not blank.

Usage: html_report_browser_test.py MLUSIM RUN.json [WORK_DIR]

Exits 77 (ctest SKIP_RETURN_CODE) only when chromium is not installed; tools/install-deps.sh
installs it. Standard library only (the PNG screenshot is decoded with zlib).
"""
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zlib

SKIP = 77
CHROMIUM_TIMEOUT_S = 90  # a hung chromium fails the test instead of hanging it


# Loads report.html in a frame and drives it like a user: three wheel steps over the timeline
# zoom it (bars 1/0.8^3 wider, new axis ticks, the counter plots follow), a double-click resets it,
# two clicks on the ops table's "cycles" header sort it ascending. Writes "ok" or the problems
# into body[data-harness].
HARNESS = r"""<!DOCTYPE html><html><body data-harness="pending">
<iframe id="f" src="report.html" width="1400" height="1200"></iframe>
<script>
document.getElementById('f').addEventListener('load', function () {
  var problems = [];
  function check(ok, what) { if (!ok) problems.push(what); }
  try {
    var win = this.contentWindow, doc = win.document;
    var svg = doc.querySelector('svg.timeline');
    var bar = Array.prototype.filter.call(svg.querySelectorAll('g.bars rect:not(.inst)'), function (r) { return +r.getAttribute('width') > 5; })[0];
    var width0 = +bar.getAttribute('width'), tick0 = svg.querySelector('g.axis text').textContent;
    var box = svg.getBoundingClientRect();
    for (var i = 0; i < 3; ++i)
      svg.dispatchEvent(new win.WheelEvent('wheel', {deltaY: -100, clientX: box.left + 700, clientY: box.top + 60, bubbles: true, cancelable: true}));
    var width1 = +bar.getAttribute('width');
    check(Math.abs(width1 / width0 - 1 / (0.8 * 0.8 * 0.8)) < 0.02, 'wheel zoom: bar width ' + width0 + ' -> ' + width1);
    check(svg.querySelector('g.axis text').textContent !== tick0, 'wheel zoom: axis ticks unchanged');
    var zoom = doc.querySelector('svg.counters g.zoom');
    check(zoom && /scale\(1\.95/.test(zoom.getAttribute('transform') || ''), 'counters do not follow the zoom: ' + (zoom && zoom.getAttribute('transform')));
    svg.dispatchEvent(new win.MouseEvent('dblclick', {bubbles: true}));
    check(Math.abs(+bar.getAttribute('width') - width0) < 0.01, 'double-click does not reset the zoom');
    var table = doc.querySelector('#ops table'), th = table.querySelectorAll('th')[4];
    th.click(); th.click();
    check(table.tBodies[0].rows[0].cells[0].textContent === 'aten::relu', 'sorting by cycles (ascending) puts ' + table.tBodies[0].rows[0].cells[0].textContent + ' first');
    check(win.mlusimErrors.length === 0, 'script errors: ' + win.mlusimErrors.join('; '));
  } catch (e) { problems.push('exception: ' + e); }
  document.body.setAttribute('data-harness', problems.length ? problems.join(' | ') : 'ok');
});
</script></body></html>
"""


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def run(cmd, timeout, **kwargs):
    """Runs cmd in its own process group; on timeout kills that group (chromium's helpers too)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, **kwargs)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        fail(f"timed out after {timeout} s: {' '.join(cmd)}")
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def chromium(binary, profile, *args):
    # A fresh profile per run: no first-run UI, no lock shared with other tests.
    cmd = [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
           "--disable-extensions", "--user-data-dir=" + profile, *args]
    return run(cmd, CHROMIUM_TIMEOUT_S)


def png_pixels(path):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB or RGBA, non-interlaced PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{path} is not a PNG")
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        fail(f"unexpected PNG format (bit depth {depth}, colour type {colour}, interlace {interlace})")
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 1:  # Sub
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif kind == 2:  # Up
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev))
        elif kind == 3:  # Average
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif kind == 4:  # Paeth
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    mlusim, run_json = sys.argv[1], sys.argv[2]
    binary = os.environ.get("CHROMIUM") or shutil.which("chromium")
    if not binary:
        print("SKIP: chromium is not installed (tools/install-deps.sh installs Debian's chromium)")
        return SKIP
    work = sys.argv[3] if len(sys.argv) > 3 else tempfile.mkdtemp(prefix="mlusim-html-")
    os.makedirs(work, exist_ok=True)
    html = os.path.join(work, "report.html")
    started = time.monotonic()

    rc, out, err = run([mlusim, "report", run_json, "-o", html], 120)
    if rc != 0:
        fail(f"mlusim report exited {rc}: {out}{err}")
    with open(html, encoding="utf-8") as f:
        page = f.read()
    # Nothing from the inputs may reach the page as markup (the fixture has <img onerror=...>,
    # </script><script> and quote characters in op, kernel and trace-event names).
    for raw in ("<img src=x", "</script><script>document", "k<'\"&>"):
        if raw in page:
            fail(f"unescaped input text in the page: {raw!r}")
    if page.count("<script>") != 2:
        fail(f"expected the page's own 2 scripts, found {page.count('<script>')}")

    with tempfile.TemporaryDirectory(prefix="mlusim-chromium-") as profile:
        url = "file://" + os.path.abspath(html)
        # 1. The DOM after the page's script ran: the script's marker set, no errors recorded,
        #    nothing injected.
        rc, dom, log = chromium(binary, profile, "--enable-logging=stderr", "--v=0", "--dump-dom", url)
        if rc != 0:
            fail(f"chromium --dump-dom exited {rc}: {log[-2000:]}")
        body = re.search(r"<body[^>]*>", dom)
        if not body:
            fail("no <body> in chromium's DOM dump")
        body = body.group(0)
        if 'data-rendered="ok"' not in body:
            fail(f"the page's script did not finish (body tag: {body})")
        if "data-js-errors" in body:
            errors = re.search(r'<div id="js-errors".*?</div>', dom, re.S)
            fail("JavaScript errors: " + (errors.group(0) if errors else body))
        if "data-injected" in body:
            fail("text from the inputs ran as script (body has data-injected)")
        uncaught = [line for line in log.splitlines() if "Uncaught" in line]
        if uncaught:
            fail("JavaScript errors in chromium's log: " + " | ".join(uncaught))
        for what, pattern, minimum in (("timeline bars", r'<rect x="[^"]*" y="[^"]*" width="[^"]*" height="[^"]*" class="c\d', 20),
                                       ("roofline points", r'<circle class="op"', 3),
                                       ("counter series", r'<path class="series"', 3)):
            found = len(re.findall(pattern, dom))
            if found < minimum:
                fail(f"expected at least {minimum} {what} in the rendered page, found {found}")

        # 2. Zoom, pan reset and table sorting work (the harness page frames the report).
        harness = os.path.join(work, "harness.html")
        with open(harness, "w", encoding="utf-8") as f:
            f.write(HARNESS)
        rc, dom, log = chromium(binary, profile, "--allow-file-access-from-files", "--dump-dom",
                                "file://" + os.path.abspath(harness))
        result = re.search(r'<body data-harness="([^"]*)"', dom)
        if rc != 0 or not result or result.group(1) != "ok":
            fail("interaction check: " + (result.group(1) if result else f"exit {rc}, no result: {log[-2000:]}"))

        # 3. A screenshot: the page is painted, not blank.
        shot = os.path.join(work, "report.png")
        rc, _, log = chromium(binary, profile, "--screenshot=" + shot, "--window-size=1400,2000", url)
        if rc != 0 or not os.path.exists(shot):
            fail(f"chromium --screenshot exited {rc}: {log[-2000:]}")
    width, height, bpp, rows = png_pixels(shot)
    background = rows[-1][-bpp:]  # bottom-right corner: page background
    painted, colours = 0, set()
    for row in rows[::4]:  # every 4th row, every 4th pixel: plenty for "not blank"
        for x in range(0, width * bpp, 4 * bpp):
            pixel = row[x:x + 3]
            if pixel != background[:3]:
                painted += 1
                colours.add(pixel)
    sampled = (len(rows[::4])) * len(range(0, width * bpp, 4 * bpp))
    share = painted / sampled
    print(f"screenshot {width}x{height}: {share:.1%} of sampled pixels painted, {len(colours)} colours")
    if share < 0.05 or len(colours) < 20:
        fail(f"the screenshot looks blank ({share:.1%} painted, {len(colours)} colours): {shot}")
    print(f"PASS: {os.path.getsize(html)} bytes of HTML rendered by {binary} in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
