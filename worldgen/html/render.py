"""A scene spec as one self-contained HTML page that looks like its platform's desktop.

Every element an action can target carries ``data-vid`` (a stable id derived from the spec:
``w0.close``, ``w1.tab.2``, ``w0.file.notes_3.txt``, ``desktop.Music``, ``d0.button.OK``,
``taskbar.w1``, ``w2.setting.wifi``, ``w3.cell.B2``, ``w3.grid``, ``menu.Open``, ``w0.text`` ...), so the world model
reads element boxes from the DOM and the planner names targets by id. Windows stack in the
spec's z-order; the focused one is drawn active; a dialog is modal over its window. No
external resources (fonts, images, scripts): the page renders offline, deterministically.
All text from the spec is HTML-escaped.
"""

from __future__ import annotations

from html import escape

from worldgen.scene import SHEET_ROWS, Scene, Window

FONTS = {"sans": "'DejaVu Sans', 'Liberation Sans', Arial, sans-serif",
         "serif": "'DejaVu Serif', 'Liberation Serif', Georgia, serif",
         "mono": "'DejaVu Sans Mono', 'Liberation Mono', monospace",
         "rounded": "'Ubuntu', 'DejaVu Sans', sans-serif"}
PAD = {"compact": 4, "normal": 7, "comfortable": 11}


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _css(scene: Scene) -> str:
    a = scene.appearance
    dark = a.theme == "dark"
    bg, fg, panel, line, muted = (("#1f1f23", "#e8e8ea", "#2b2b31", "#3c3c44", "#9a9aa6") if dark else
                                  ("#ffffff", "#1d1d1f", "#f3f3f5", "#d6d6dc", "#6e6e78"))
    r, p = a.corner_radius, PAD[a.density]
    fs = round(13 * a.font_scale, 1)
    return f"""
* {{ box-sizing: border-box; }}
html, body {{ margin: 0; width: {scene.width}px; height: {scene.height}px; overflow: hidden;
  font-family: {FONTS[a.font_family]}; font-size: {fs}px; color: {fg}; }}
body {{ background: linear-gradient(135deg, {a.wallpaper}, {a.wallpaper_to}); position: relative; }}
.bar {{ position: absolute; display: flex; align-items: center; gap: {p}px; padding: 0 {p + 2}px;
  background: {"rgba(20,20,24,.92)" if dark else "rgba(245,245,248,.92)"}; z-index: 900; }}
.bar .item {{ padding: 3px {p}px; border-radius: {r}px; white-space: nowrap; }}
.bar .item.active {{ background: {a.accent}; color: #fff; }}
.icon {{ position: absolute; width: 84px; text-align: center; color: #fff; text-shadow: 0 1px 2px #000;
  font-size: {fs - 1}px; padding: 4px; border-radius: {r}px; }}
.icon .glyph {{ width: 44px; height: 36px; margin: 0 auto 4px; border-radius: {max(2, r // 2)}px; }}
.icon.folder .glyph {{ background: #f0b429; }} .icon.file .glyph {{ background: #e8eef7; }}
.icon.selected {{ background: rgba(255,255,255,.28); }}
.win {{ position: absolute; background: {bg}; border: 1px solid {line}; border-radius: {r}px; overflow: hidden;
  box-shadow: 0 8px 28px rgba(0,0,0,.35); display: flex; flex-direction: column; }}
.win.inactive {{ filter: saturate(.85); }} .win.inactive .title {{ opacity: .65; }}
.titlebar {{ height: {28 + p}px; display: flex; align-items: center; padding: 0 {p + 2}px; gap: {p}px;
  background: {panel}; border-bottom: 1px solid {line}; flex: none; }}
.titlebar .title {{ flex: 1; text-align: center; font-weight: 600; white-space: nowrap; overflow: hidden;
  text-overflow: ellipsis; }}
.ctl {{ width: 26px; height: 20px; display: flex; align-items: center; justify-content: center;
  border-radius: {max(2, r // 2)}px; color: {muted}; }}
.mac .ctl {{ width: 13px; height: 13px; border-radius: 50%; }}
.mac .ctl.close {{ background: #ff5f57; }} .mac .ctl.min {{ background: #febc2e; }} .mac .ctl.max {{ background: #28c840; }}
.body {{ flex: 1; overflow: hidden; position: relative; }}
.toolbar {{ display: flex; gap: {p}px; padding: {p}px; border-bottom: 1px solid {line}; background: {panel}; }}
.btn {{ padding: {p - 1}px {p + 6}px; border: 1px solid {line}; border-radius: {r}px; background: {bg};
  white-space: nowrap; }}
.btn.primary {{ background: {a.accent}; border-color: {a.accent}; color: #fff; }}
.files {{ display: grid; grid-template-columns: repeat(auto-fill, minmax(110px, 1fr)); gap: {p}px; padding: {p + 4}px; }}
.file {{ padding: {p}px; border-radius: {r}px; text-align: center; overflow: hidden; text-overflow: ellipsis;
  white-space: nowrap; }}
.file .glyph {{ width: 40px; height: 32px; margin: 0 auto 4px; border-radius: 3px; background: #c9d6ea; }}
.file.folder .glyph {{ background: #f0b429; }}
.file.selected {{ background: {a.accent}; color: #fff; }}
.text {{ padding: {p + 4}px; white-space: pre-wrap; word-break: break-word; height: 100%; }}
.term {{ background: #101014; color: #d0f0c0; font-family: {FONTS["mono"]}; }}
.tabs {{ display: flex; gap: 2px; padding: {p}px {p}px 0; background: {panel}; }}
.tab {{ padding: {p}px {p + 8}px; border-radius: {r}px {r}px 0 0; max-width: 180px; overflow: hidden;
  text-overflow: ellipsis; white-space: nowrap; color: {muted}; }}
.tab.active {{ background: {bg}; color: {fg}; font-weight: 600; }}
.urlbar {{ margin: {p}px; padding: {p}px {p + 4}px; border: 1px solid {line}; border-radius: 999px; color: {muted}; }}
.page {{ padding: {p + 10}px; font-size: {fs + 5}px; }}
.setting {{ display: flex; justify-content: space-between; align-items: center; padding: {p + 3}px {p + 8}px;
  border-bottom: 1px solid {line}; }}
.toggle {{ width: 42px; height: 24px; border-radius: 12px; background: {line}; position: relative; }}
.toggle.on {{ background: {a.accent}; }}
.toggle::after {{ content: ""; position: absolute; top: 3px; left: 3px; width: 18px; height: 18px; border-radius: 50%;
  background: #fff; }}
.toggle.on::after {{ left: 21px; }}
table.grid {{ border-collapse: collapse; margin: {p}px; }}
table.grid td, table.grid th {{ border: 1px solid {line}; width: 78px; height: {18 + p}px; padding: 0 4px; }}
table.grid th {{ background: {panel}; color: {muted}; font-weight: 500; }}
table.grid td.selected {{ outline: 2px solid {a.accent}; outline-offset: -2px; }}
.modal {{ position: absolute; inset: 0; background: rgba(0,0,0,.25); z-index: 800; }}
.dialog {{ position: absolute; background: {bg}; border: 1px solid {line}; border-radius: {r + 2}px; width: 360px;
  box-shadow: 0 12px 40px rgba(0,0,0,.45); padding: {p + 8}px; z-index: 801; }}
.dialog h3 {{ margin: 0 0 {p}px; font-size: {fs + 2}px; }}
.dialog .buttons {{ display: flex; justify-content: flex-end; gap: {p}px; margin-top: {p + 8}px; }}
.dialog input {{ width: 100%; padding: {p}px; border: 1px solid {line}; border-radius: {r}px; background: {panel};
  color: {fg}; font: inherit; }}
.menu {{ position: absolute; min-width: 170px; background: {bg}; border: 1px solid {line}; border-radius: {r}px;
  box-shadow: 0 6px 22px rgba(0,0,0,.4); padding: 4px 0; z-index: 850; }}
.menu .mi {{ padding: {p}px {p + 10}px; white-space: nowrap; }}
.menu .mi:first-child {{ background: {panel}; }}
.toast {{ position: absolute; right: 18px; padding: {p + 4}px {p + 10}px; border-radius: {r + 2}px;
  background: {"#33333b" if dark else "#333"}; color: #fff; z-index: 950; }}
"""


def _controls(scene: Scene, w: Window) -> str:
    names = [("close", "&#x2715;"), ("min", "&#x2013;"), ("max", "&#x25a1;")]
    order = names if scene.platform == "macos" else [names[1], names[2], names[0]]  # macOS: left; others: - [] x
    return "".join(f'<div class="ctl {k}" data-vid="{w.id}.{k}" title="{k}">'
                   f'{"" if scene.platform == "macos" else g}</div>' for k, g in order)


def _body(scene: Scene, w: Window) -> str:
    v = w.id
    if w.app == "file_manager":
        items = "".join(f'<div class="file {f.kind}{" selected" if f.selected else ""}" data-vid="{v}.file.{_e(f.name)}">'
                        f'<div class="glyph"></div>{_e(f.name)}</div>' for f in w.files)
        return (f'<div class="toolbar"><div class="btn" data-vid="{v}.back">&#x2190;</div>'
                f'<div class="btn" data-vid="{v}.path">{_e(w.path)}</div>'
                f'<div class="btn" data-vid="{v}.new_folder">New folder</div></div><div class="files">{items}</div>')
    if w.app in ("text_editor", "terminal"):
        cls = "text term" if w.app == "terminal" else "text"
        return f'<div class="{cls}" data-vid="{v}.text">{_e(w.text or "")}</div>'
    if w.app == "browser":
        tabs = "".join(f'<div class="tab{" active" if i == w.active_tab else ""}" data-vid="{v}.tab.{i}">{_e(t.title)}</div>'
                       for i, t in enumerate(w.tabs))
        tab = w.tabs[w.active_tab]
        return (f'<div class="tabs">{tabs}<div class="tab" data-vid="{v}.new_tab">+</div></div>'
                f'<div class="urlbar" data-vid="{v}.url">{_e(tab.url)}</div>'
                f'<div class="page" data-vid="{v}.page"><h2>{_e(tab.title)}</h2><p>{_e(tab.page)}</p></div>')
    if w.app == "settings":
        rows = "".join(f'<div class="setting"><span>{_e(s.label)}</span><div class="toggle{" on" if s.on else ""}" '
                       f'data-vid="{v}.setting.{s.key}" role="switch" aria-checked="{str(s.on).lower()}"></div></div>'
                       for s in w.settings)
        return f"<div>{rows}</div>"
    if w.app == "spreadsheet":
        cols = "ABCDEF"
        head = "<tr><th></th>" + "".join(f"<th>{c}</th>" for c in cols) + "</tr>"
        body = ""
        for r in range(w.scroll_row + 1, w.scroll_row + SHEET_ROWS + 1):
            body += f"<tr><th>{r}</th>" + "".join(
                f'<td class="{"selected" if w.selected_cell == f"{c}{r}" else ""}" data-vid="{v}.cell.{c}{r}">'
                f'{_e(w.cells.get(f"{c}{r}", ""))}</td>' for c in cols) + "</tr>"
        return f'<table class="grid" data-vid="{v}.grid">{head}{body}</table>'
    raise ValueError(w.app)


def _window(scene: Scene, w: Window, z: int) -> str:
    if w.minimized:
        return ""
    top = 28 if scene.platform in ("ubuntu", "macos") else 0
    bottom = 48 if scene.platform in ("windows", "chrome") else (64 if scene.platform == "macos" else 0)
    left = 64 if scene.platform == "ubuntu" else 0
    x, y, ww, hh = ((left, top, scene.width - left, scene.height - top - bottom) if w.maximized
                    else (w.x, w.y, w.w, w.h))
    active = "" if scene.focused == w.id else " inactive"
    mac = " mac" if scene.platform == "macos" else ""
    return (f'<div class="win{active}{mac}" data-vid="{w.id}" style="left:{x}px;top:{y}px;width:{ww}px;height:{hh}px;'
            f'z-index:{10 + z}"><div class="titlebar" data-vid="{w.id}.titlebar">'
            + (_controls(scene, w) + f'<div class="title">{_e(w.title)}</div>' if mac else
               f'<div class="title" style="text-align:left">{_e(w.title)}</div>' + _controls(scene, w))
            + f'</div><div class="body">{_body(scene, w)}</div></div>')


def _bars(scene: Scene) -> str:
    items = "".join(f'<div class="item{" active" if scene.focused == w.id else ""}" data-vid="taskbar.{w.id}">'
                    f'{_e(scene.app_name(w.app))}</div>' for w in scene.windows)
    W, H = scene.width, scene.height
    if scene.platform == "windows":
        return (f'<div class="bar" style="left:0;bottom:0;width:{W}px;height:48px" data-vid="taskbar">'
                f'<div class="item" data-vid="taskbar.start">&#x229e; Start</div>{items}'
                f'<div class="item" style="margin-left:auto">10:24</div></div>')
    if scene.platform == "macos":
        return (f'<div class="bar" style="left:0;top:0;width:{W}px;height:28px"><div class="item">&#x25cf;</div>'
                f'<div class="item" style="margin-left:auto">Thu 10:24</div></div>'
                f'<div class="bar" style="left:{W // 2 - 220}px;bottom:6px;width:440px;height:56px;border-radius:14px;'
                f'justify-content:center" data-vid="taskbar">{items}</div>')
    if scene.platform == "chrome":
        return (f'<div class="bar" style="left:0;bottom:0;width:{W}px;height:48px;justify-content:center" '
                f'data-vid="taskbar"><div class="item" data-vid="taskbar.launcher">&#x25ef;</div>{items}'
                f'<div class="item" style="position:absolute;right:12px">10:24</div></div>')
    return (f'<div class="bar" style="left:0;top:0;width:{W}px;height:28px;justify-content:center">'
            f'<div class="item">Activities</div><div class="item">Thu 10:24</div></div>'
            f'<div class="bar" style="left:0;top:28px;width:64px;height:{H - 28}px;flex-direction:column;'
            f'padding-top:8px" data-vid="taskbar">{items}</div>')


def render_html(scene: Scene) -> str:
    """The scene as a standalone HTML document."""
    parts = [f'<!doctype html><html><head><meta charset="utf-8"><title>{_e(scene.scene_id)}</title>'
             f"<style>{_css(scene)}</style></head><body>"]
    x0 = 84 if scene.platform == "ubuntu" else 20
    y0 = 44 if scene.platform in ("ubuntu", "macos") else 16
    for i, icon in enumerate(scene.desktop):
        col, row = divmod(i, max(1, (scene.height - 140) // 96))
        parts.append(f'<div class="icon {icon.kind}{" selected" if icon.selected else ""}" data-vid="desktop.{_e(icon.name)}" '
                     f'style="left:{x0 + col * 92}px;top:{y0 + row * 96}px"><div class="glyph"></div>{_e(icon.name)}</div>')
    menu_at = None
    for i, icon in enumerate(scene.desktop):
        if scene.menu is not None and icon.name == scene.menu.target:
            col, row = divmod(i, max(1, (scene.height - 140) // 96))
            menu_at = (x0 + col * 92 + 60, y0 + row * 96 + 40)
    for z, w in enumerate(scene.windows):
        parts.append(_window(scene, w, z))
    if menu_at is not None:  # above the windows, like a real context menu
        items = "".join(f'<div class="mi" data-vid="menu.{_e(it)}">{_e(it)}</div>' for it in scene.menu.items)
        mx = min(menu_at[0], scene.width - 190)
        my = min(menu_at[1], scene.height - 40 - 34 * len(scene.menu.items))
        parts.append(f'<div class="menu" data-vid="menu" style="left:{mx}px;top:{my}px">{items}</div>')
    for d in scene.dialogs:
        owner = scene.window(d.window)
        cx = owner.x + owner.w // 2 - 180 if owner and not owner.maximized else scene.width // 2 - 180
        cy = owner.y + 80 if owner and not owner.maximized else scene.height // 3
        buttons = "".join(f'<div class="btn{" primary" if j == len(d.buttons) - 1 else ""}" '
                          f'data-vid="{d.id}.button.{_e(b)}">{_e(b)}</div>' for j, b in enumerate(d.buttons))
        field = (f'<input data-vid="{d.id}.filename" value="{_e(d.filename or "")}">' if d.kind == "save" else "")
        parts.append(f'<div class="modal" data-vid="{d.id}.backdrop"></div><div class="dialog" data-vid="{d.id}" '
                     f'style="left:{max(8, cx)}px;top:{max(8, cy)}px"><h3>{_e(d.title)}</h3><div>{_e(d.message)}</div>'
                     f'{field}<div class="buttons">{buttons}</div></div>')
    for i, t in enumerate(scene.toasts):
        bottom = 64 + i * 56 if scene.platform in ("windows", "chrome", "macos") else 16 + i * 56
        parts.append(f'<div class="toast" data-vid="toast.{i}" style="bottom:{bottom}px">{_e(t.text)}</div>')
    parts.append(_bars(scene))
    parts.append("</body></html>")
    return "".join(parts)


__all__ = ["render_html"]
