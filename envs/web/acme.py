"""The bundled custom web tasks, on the local "Acme Outfitters" shop (``sites/acme/``).

Seven tasks of different kinds: sign in (form), find a product (search + navigation), add
N of a product to the cart (multi-page + number input), remove one cart item (pre-seeded
state), change settings (select + radio + checkbox + save), answer a question in the chat
(``send_msg_to_user``) and recognise an impossible request (``report_infeasible``).
Parameters are drawn from the episode's seeded ``rng``; validation reads the shop's state
(its localStorage) or the chat, never the agent's actions. Each task's oracle looks at the
current page and returns the next actions, so it keeps working across page loads.
"""

from __future__ import annotations

import json
import urllib.parse

from .miniwob_oracles import OracleError, find_bid
from .tasks import WebTask, register_web_task, site_url

# Same data as sites/acme/acme.js (the tests check they agree).
CATALOG = [
    (1, "Trail Runner Shoes", 89.00), (2, "Summit Hiking Boots", 149.50), (3, "Canyon Sandals", 39.99),
    (4, "Alpine Down Jacket", 229.00), (5, "Storm Rain Shell", 119.00), (6, "Fleece Pullover", 54.25),
    (7, "Merino Wool Socks", 18.75), (8, "Sun Hat", 24.00), (9, "Insulated Gloves", 32.40),
    (10, "Trekking Poles", 64.90), (11, "Headlamp 300", 29.95), (12, "Water Filter Bottle", 44.00),
    (13, "Camp Stove", 79.00), (14, "Two-Person Tent", 259.00), (15, "Sleeping Bag 0C", 139.00),
    (16, "Daypack 22L", 74.50), (17, "Expedition Pack 65L", 289.00), (18, "Hip Pack", 34.00),
    (19, "Quick-Dry Shorts", 42.00), (20, "Convertible Pants", 68.00), (21, "Base Layer Top", 49.95),
    (22, "Compass Pro", 27.50), (23, "First Aid Kit", 36.00), (24, "Travel Towel", 21.00),
]
FEATURED = 4  # the shop page lists the first four without a search
LANGUAGES = ["English", "French", "German", "Spanish", "Japanese"]
THEMES = ["Light", "Dark", "High contrast"]
USERS = ["maria.k", "jdoe", "sam_lee", "alex99", "priya.r", "tom.h"]


def _act(name: str, *args) -> str:
    return f"{name}({', '.join(json.dumps(a) for a in args)})"


def _path(page) -> str:
    return urllib.parse.urlparse(page.url).path.rsplit("/", 1)[-1]


def _store(page, key: str, default=None):
    raw = page.evaluate("(k) => localStorage.getItem('acme.' + k)", key)
    return default if raw is None else json.loads(raw)


def _seed_store(page, **values) -> None:
    page.evaluate("(kv) => { for (const [k, v] of Object.entries(kv)) localStorage.setItem('acme.' + k, "
                  "JSON.stringify(v)); }", values)


def _value(page, selector: str):
    return page.evaluate("(s) => { const e = document.querySelector(s); return e ? e.value : null; }", selector)


def _nav(page, target: str) -> list[str]:
    return [_act("click", find_bid(page, f'nav a[href="{target}"]'))]


def _open_product(page, name: str) -> list[str]:
    """Next actions towards the product page of ``name`` (via the shop search)."""
    if _path(page) != "shop.html":
        return _nav(page, "shop.html")
    try:
        return [_act("click", find_bid(page, "#results a", name))]
    except OracleError:
        pass
    q = find_bid(page, "#q")
    plan = [] if _value(page, "#q") == name else [_act("fill", q, name)]
    return plan + [_act("click", find_bid(page, "#go"))]


def _on_product(page, pid: int) -> bool:
    q = urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query)
    return _path(page) == "product.html" and q.get("id") == [str(pid)]


class AcmeTask(WebTask):
    allow_hosts = ()
    start_page = "index.html"

    def setup(self, page) -> str:
        page.goto(site_url("acme", self.start_page), wait_until="load", timeout=15_000)
        return self.prepare(page)

    def prepare(self, page) -> str:
        raise NotImplementedError

    def product(self, skip_featured: bool = True) -> tuple[int, str, float]:
        return self.rng.choice(CATALOG[FEATURED:] if skip_featured else CATALOG)


@register_web_task("acme-login")
class Login(AcmeTask):
    description = "sign in with the username and password given in the goal (form)"

    def prepare(self, page) -> str:
        self.user = self.rng.choice(USERS)
        alphabet = "abcdefghjkmnpqrstuvwxyz23456789"
        self.password = "".join(self.rng.choice(alphabet) for _ in range(8))
        _seed_store(page, users={self.user: self.password, "guest": "guest"})
        return f'Sign in to Acme Outfitters as "{self.user}" with the password "{self.password}".'

    def validate(self, page, chat):
        if _store(page, "session") == self.user:
            return 1.0, True, {"success": True}
        if _store(page, "failed_logins", 0) >= 3:
            return 0.0, True, {"success": False, "reason": "three failed sign-ins"}
        return 0.0, False, {"success": False}

    def oracle(self, page):
        if _path(page) != "login.html":
            return _nav(page, "login.html")
        plan = []
        if _value(page, "#user") != self.user:
            plan.append(_act("fill", find_bid(page, "#user"), self.user))
        if _value(page, "#pass") != self.password:
            plan.append(_act("fill", find_bid(page, "#pass"), self.password))
        return plan + [_act("click", find_bid(page, "#signin"))]


@register_web_task("acme-find-product")
class FindProduct(AcmeTask):
    description = "search the shop and open a product's page (search + navigation)"

    def prepare(self, page) -> str:
        self.pid, self.pname, _ = self.product()
        return f'Open the product page of "{self.pname}" in the Acme Outfitters shop.'

    def validate(self, page, chat):
        ok = _on_product(page, self.pid)
        return (1.0, True, {"success": True}) if ok else (0.0, False, {"success": False})

    def oracle(self, page):
        return [] if _on_product(page, self.pid) else _open_product(page, self.pname)


@register_web_task("acme-add-to-cart")
class AddToCart(AcmeTask):
    description = "put N of a product in the cart (search, product page, quantity, button)"
    start_page = "shop.html"

    def prepare(self, page) -> str:
        self.pid, self.pname, _ = self.product()
        self.count = self.rng.randint(2, 5)
        return f'Add {self.count} of "{self.pname}" to the cart.'

    def validate(self, page, chat):
        cart = _store(page, "cart", {})
        if not cart:
            return 0.0, False, {"success": False}
        ok = cart == {str(self.pid): self.count}
        return (1.0 if ok else 0.0), True, {"success": ok}

    def oracle(self, page):
        if not _on_product(page, self.pid):
            return _open_product(page, self.pname)
        plan = [] if _value(page, "#qty") == str(self.count) else [_act("fill", find_bid(page, "#qty"),
                                                                         str(self.count))]
        return plan + [_act("click", find_bid(page, "#add"))]


@register_web_task("acme-remove-from-cart")
class RemoveFromCart(AcmeTask):
    description = "remove one named item from a pre-filled cart, keeping the others"

    def prepare(self, page) -> str:
        items = self.rng.sample(CATALOG, 3)
        self.cart = {str(pid): self.rng.randint(1, 3) for pid, _, _ in items}
        self.pid, self.pname, _ = self.rng.choice(items)
        _seed_store(page, cart=self.cart)
        page.reload(wait_until="load")  # the header shows the seeded cart
        return f'Remove "{self.pname}" from the cart and keep everything else in it.'

    def validate(self, page, chat):
        cart = _store(page, "cart", {})
        if cart == self.cart:
            return 0.0, False, {"success": False}
        want = {k: v for k, v in self.cart.items() if k != str(self.pid)}
        ok = cart == want
        return (1.0 if ok else 0.0), True, {"success": ok}

    def oracle(self, page):
        if _path(page) != "cart.html":
            return _nav(page, "cart.html")
        return [_act("click", page.evaluate(
            "(n) => { const b = document.querySelector(`button[aria-label=\"Remove ${n}\"]`);"
            " return b ? b.getAttribute('data-vagen-bid') : null; }", self.pname) or _missing(self.pname))]


def _missing(what: str) -> str:
    raise OracleError(f"no element for {what!r}")


@register_web_task("acme-settings")
class Settings(AcmeTask):
    description = "change language (select), theme (radio) and email (checkbox), then save"

    def prepare(self, page) -> str:
        self.language = self.rng.choice(LANGUAGES[1:])
        self.theme = self.rng.choice(THEMES[1:])
        self.email = self.rng.random() < 0.5
        onoff = "turn on" if self.email else "turn off"
        return (f"In Settings, set the language to {self.language}, the theme to {self.theme}, "
                f"{onoff} email notifications, and save.")

    def validate(self, page, chat):
        if not _store(page, "settings_saves", 0):
            return 0.0, False, {"success": False}
        ok = _store(page, "settings", {}) == {"language": self.language, "theme": self.theme, "email": self.email}
        return (1.0 if ok else 0.0), True, {"success": ok}

    def oracle(self, page):
        if _path(page) != "settings.html":
            return _nav(page, "settings.html")
        plan = []
        if _value(page, "#lang") != self.language:
            plan.append(_act("select_option", find_bid(page, "#lang"), self.language))
        radio = page.evaluate("(t) => { const r = document.querySelector(`input[name=theme][value=\"${t}\"]`);"
                              " return r ? [r.getAttribute('data-vagen-bid'), r.checked] : null; }", self.theme)
        if radio is None:
            raise OracleError(f"no theme radio {self.theme!r}")
        if not radio[1]:
            plan.append(_act("click", radio[0]))
        if page.evaluate("() => document.querySelector('#email').checked") != self.email:
            plan.append(_act("click", find_bid(page, "#email")))
        return plan + [_act("click", find_bid(page, "#save"))]


def _price_texts(price: float) -> list[str]:
    texts = [f"{price:.2f}"]
    if price == int(price):
        texts.append(f"${int(price)}")
    return texts


@register_web_task("acme-price-question")
class PriceQuestion(AcmeTask):
    description = "look up a price and tell the user (send_msg_to_user)"

    def prepare(self, page) -> str:
        self.pid, self.pname, self.price = self.product()
        return (f'How much does "{self.pname}" cost at Acme Outfitters? '
                "Tell the user the price with send_msg_to_user.")

    def validate(self, page, chat):
        said = [m["message"] for m in chat if m["role"] == "assistant"]
        if not said:
            return 0.0, False, {"success": False}
        ok = any(t in said[-1] for t in _price_texts(self.price))
        return (1.0 if ok else 0.0), True, {"success": ok}

    def oracle(self, page):
        if not _on_product(page, self.pid):
            return _open_product(page, self.pname)
        shown = page.evaluate("() => document.querySelector('#price').textContent")
        return [_act("send_msg_to_user", f"{self.pname} costs {shown}.")]


@register_web_task("acme-infeasible")
class Infeasible(AcmeTask):
    description = "an impossible request (the help page says so): report_infeasible"

    def prepare(self, page) -> str:
        self.currency = self.rng.choice(["euros", "pounds", "yen"])
        return f"Change the prices in the Acme Outfitters shop to {self.currency}."

    def validate(self, page, chat):
        roles = [m["role"] for m in chat]
        if "infeasible" in roles:
            return 1.0, True, {"success": True}
        if "assistant" in roles:
            return 0.0, True, {"success": False, "reason": "answered instead of reporting infeasible"}
        return 0.0, False, {"success": False}

    def oracle(self, page):
        if _path(page) != "help.html":
            return _nav(page, "help.html")
        return [_act("report_infeasible", "Prices are in US dollars and cannot be changed.")]
