// Acme Outfitters: a small static shop used by the bundled custom web tasks.
// All state lives in this origin's localStorage (a fresh browser context per episode wipes it).
"use strict";
const ACME_CATALOG = [
  {id: 1, name: "Trail Runner Shoes", price: 89.00, category: "Footwear"},
  {id: 2, name: "Summit Hiking Boots", price: 149.50, category: "Footwear"},
  {id: 3, name: "Canyon Sandals", price: 39.99, category: "Footwear"},
  {id: 4, name: "Alpine Down Jacket", price: 229.00, category: "Jackets"},
  {id: 5, name: "Storm Rain Shell", price: 119.00, category: "Jackets"},
  {id: 6, name: "Fleece Pullover", price: 54.25, category: "Jackets"},
  {id: 7, name: "Merino Wool Socks", price: 18.75, category: "Accessories"},
  {id: 8, name: "Sun Hat", price: 24.00, category: "Accessories"},
  {id: 9, name: "Insulated Gloves", price: 32.40, category: "Accessories"},
  {id: 10, name: "Trekking Poles", price: 64.90, category: "Gear"},
  {id: 11, name: "Headlamp 300", price: 29.95, category: "Gear"},
  {id: 12, name: "Water Filter Bottle", price: 44.00, category: "Gear"},
  {id: 13, name: "Camp Stove", price: 79.00, category: "Gear"},
  {id: 14, name: "Two-Person Tent", price: 259.00, category: "Gear"},
  {id: 15, name: "Sleeping Bag 0C", price: 139.00, category: "Gear"},
  {id: 16, name: "Daypack 22L", price: 74.50, category: "Packs"},
  {id: 17, name: "Expedition Pack 65L", price: 289.00, category: "Packs"},
  {id: 18, name: "Hip Pack", price: 34.00, category: "Packs"},
  {id: 19, name: "Quick-Dry Shorts", price: 42.00, category: "Clothing"},
  {id: 20, name: "Convertible Pants", price: 68.00, category: "Clothing"},
  {id: 21, name: "Base Layer Top", price: 49.95, category: "Clothing"},
  {id: 22, name: "Compass Pro", price: 27.50, category: "Gear"},
  {id: 23, name: "First Aid Kit", price: 36.00, category: "Gear"},
  {id: 24, name: "Travel Towel", price: 21.00, category: "Accessories"},
];
const LANGUAGES = ["English", "French", "German", "Spanish", "Japanese"];
const THEMES = ["Light", "Dark", "High contrast"];

const acme = {
  load(key, dflt) { try { const v = localStorage.getItem("acme." + key); return v === null ? dflt : JSON.parse(v); } catch (e) { return dflt; } },
  save(key, value) { localStorage.setItem("acme." + key, JSON.stringify(value)); },
  product(id) { return ACME_CATALOG.find((p) => p.id === Number(id)); },
  money(x) { return "$" + x.toFixed(2); },
  param(name) { return new URLSearchParams(location.search).get(name); },
  cartCount() { return Object.values(acme.load("cart", {})).reduce((a, b) => a + b, 0); },
  header() {
    const user = acme.load("session", null);
    const nav = document.createElement("nav");
    nav.innerHTML = '<a href="index.html">Home</a><a href="shop.html">Shop</a>' +
      '<a href="cart.html">Cart (' + acme.cartCount() + ')</a>' +
      (user ? '<a href="account.html">Account</a>' : '<a href="login.html">Sign in</a>') +
      '<a href="settings.html">Settings</a><a href="help.html">Help</a>';
    document.body.prepend(nav);
  },
};
document.addEventListener("DOMContentLoaded", acme.header);
