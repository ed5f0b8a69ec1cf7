"""Dump the AT-SPI accessibility tree as XML (run as a script, as the desktop user).

The control server runs this file in a subprocess — under a Python that has ``pyatspi``
(Debian's ``python3-pyatspi``), as the user whose D-Bus session the apps registered on,
with a time limit — so a hung or crashing accessibility bus never takes the server down.
The XML follows OSWorld's Ubuntu layout (tag = role, ``name`` attribute, states /
component / text / value in namespaced attributes) so its tree linearizers read it.

    python3 a11y.py [--max-depth 50] [--max-children 256] [--max-nodes 5000]

Exit codes: 0 = XML on stdout; 3 = AT-SPI unavailable (reason on stderr).
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET

NS = {
    "st": "https://accessibility.ubuntu.example.org/ns/state",
    "attr": "https://accessibility.ubuntu.example.org/ns/attributes",
    "cp": "https://accessibility.ubuntu.example.org/ns/component",
    "txt": "https://accessibility.ubuntu.example.org/ns/text",
    "val": "https://accessibility.ubuntu.example.org/ns/value",
    "act": "https://accessibility.ubuntu.example.org/ns/action",
}
OFFSCREEN = -(2**31)


def _tag(role: str) -> str:
    tag = "".join(c if c.isalnum() else "-" for c in (role or "unknown")).strip("-")
    return tag if tag and not tag[0].isdigit() else f"node-{tag}"


def dump(max_depth: int, max_children: int, max_nodes: int) -> ET.Element:
    import pyatspi

    for prefix, uri in NS.items():
        ET.register_namespace(prefix, uri)
    count = 0

    def visit(node, depth: int) -> ET.Element | None:
        nonlocal count
        count += 1
        try:
            role = node.getRoleName()
            states = node.getState().get_states()
        except Exception:  # an app went away mid-walk
            return None
        names = [pyatspi.StateType._enum_lookup[s].split("_", 1)[1].lower() for s in states]
        el = ET.Element(_tag(role), {"name": node.name or ""})
        for s in names:
            el.set(f"{{{NS['st']}}}{s}", "true")
        try:
            comp = node.queryComponent()
            x, y = comp.getPosition(pyatspi.XY_SCREEN)
            w, h = comp.getSize()
            if x > OFFSCREEN:
                el.set(f"{{{NS['cp']}}}screencoord", f"({x}, {y})")
                el.set(f"{{{NS['cp']}}}size", f"({w}, {h})")
        except Exception:
            pass
        try:
            text = node.queryText()
            el.text = text.getText(0, min(text.characterCount, 10_000))
        except Exception:
            pass
        try:
            value = node.queryValue()
            el.set(f"{{{NS['val']}}}value", str(value.currentValue))
        except Exception:
            pass
        if depth >= max_depth:
            return el
        try:
            n = min(node.childCount, max_children)  # Calc sheets report 2^31-1 children
        except Exception:
            n = 0
        for i in range(n):
            if count >= max_nodes:
                el.set("truncated", "true")
                break
            try:
                child = node.getChildAtIndex(i)
            except Exception:
                continue
            if child is None:
                continue
            try:
                st = child.getState()
                if not (st.contains(pyatspi.STATE_SHOWING) and st.contains(pyatspi.STATE_VISIBLE)) \
                        and child.getRoleName() != "application":
                    continue
            except Exception:
                continue
            sub = visit(child, depth + 1)
            if sub is not None:
                el.append(sub)
        return el

    desktop = pyatspi.Registry.getDesktop(0)
    root = ET.Element("desktop-frame", {"name": "main"})
    for i in range(min(desktop.childCount, max_children)):
        app = desktop.getChildAtIndex(i)
        if app is not None:
            sub = visit(app, 1)
            if sub is not None:
                root.append(sub)
    return root


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-depth", type=int, default=50)
    ap.add_argument("--max-children", type=int, default=256)
    ap.add_argument("--max-nodes", type=int, default=5000)
    args = ap.parse_args()
    try:
        import pyatspi  # noqa: F401
    except Exception as e:  # ImportError, or gi failing to load its typelibs
        print(f"pyatspi not importable: {e}", file=sys.stderr)
        return 3
    try:
        root = dump(args.max_depth, args.max_children, args.max_nodes)
    except Exception as e:
        print(f"AT-SPI bus unavailable: {type(e).__name__}: {e}", file=sys.stderr)
        return 3
    sys.stdout.write(ET.tostring(root, encoding="unicode"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
