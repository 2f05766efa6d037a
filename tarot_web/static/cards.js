// The cards, drawn here as SVG (nothing is fetched from elsewhere): a rank and a suit mark per card.
"use strict";

const SUIT_COLOURS = {
  french54: ["#111", "#111", "#c0182a", "#c0182a", "#4b2a7a", "#8a5a00"],
  bolognese: ["#b8860b", "#c0182a", "#1d4f91", "#2e6b2e", "#4b2a7a", "#8a5a00"],
};

function esc(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}

// The mark of a suit at (x, y), size s: French pips as shapes, Bolognese coins, cups, swords, batons.
function suitMark(pack, suit, x, y, s, colour) {
  if (suit >= 4) return "";
  if (pack === "french54") {
    const shapes = [
      `M${x} ${y - s}C${x + s} ${y - s / 3} ${x + s} ${y + s / 2} ${x} ${y + s / 4}C${x - s} ${y + s / 2} ${x - s} ${y - s / 3} ${x} ${y - s}Z M${x} ${y}L${x + s / 3} ${y + s}L${x - s / 3} ${y + s}Z`,
      `M${x} ${y - s / 2}m-${s / 2.2} 0a${s / 2.2} ${s / 2.2} 0 1 0 ${s / 1.1} 0a${s / 2.2} ${s / 2.2} 0 1 0 -${s / 1.1} 0 M${x - s / 2} ${y + s / 4}m-${s / 2.2} 0a${s / 2.2} ${s / 2.2} 0 1 0 ${s / 1.1} 0a${s / 2.2} ${s / 2.2} 0 1 0 -${s / 1.1} 0 M${x + s / 2} ${y + s / 4}m-${s / 2.2} 0a${s / 2.2} ${s / 2.2} 0 1 0 ${s / 1.1} 0a${s / 2.2} ${s / 2.2} 0 1 0 -${s / 1.1} 0 M${x} ${y}L${x + s / 3} ${y + s}L${x - s / 3} ${y + s}Z`,
      `M${x} ${y - s}L${x + s * 0.7} ${y}L${x} ${y + s}L${x - s * 0.7} ${y}Z`,
      `M${x} ${y + s}C${x - s * 1.2} ${y} ${x - s} ${y - s} ${x} ${y - s / 3}C${x + s} ${y - s} ${x + s * 1.2} ${y} ${x} ${y + s}Z`,
    ];
    return `<path d="${shapes[suit]}" fill="${colour}"/>`;
  }
  const marks = [
    `<circle cx="${x}" cy="${y}" r="${s}" fill="#e8c040" stroke="${colour}" stroke-width="2"/><circle cx="${x}" cy="${y}" r="${s / 2.5}" fill="none" stroke="${colour}"/>`,
    `<path d="M${x - s} ${y - s}L${x + s} ${y - s}Q${x + s} ${y + s / 3} ${x} ${y + s / 3}Q${x - s} ${y + s / 3} ${x - s} ${y - s}Z M${x - s / 6} ${y + s / 3}L${x + s / 6} ${y + s / 3}L${x + s / 2} ${y + s}L${x - s / 2} ${y + s}Z" fill="${colour}"/>`,
    `<path d="M${x} ${y - s * 1.2}L${x + s / 5} ${y + s / 2}L${x - s / 5} ${y + s / 2}Z M${x - s / 1.5} ${y + s / 2}L${x + s / 1.5} ${y + s / 2}L${x + s / 1.5} ${y + s * 0.7}L${x - s / 1.5} ${y + s * 0.7}Z" fill="${colour}"/>`,
    `<rect x="${x - s / 4}" y="${y - s * 1.2}" width="${s / 2}" height="${s * 2.4}" rx="${s / 4}" fill="${colour}"/>`,
  ];
  return marks[suit];
}

function rankText(name, suit) {
  return suit >= 4 ? name : name.slice(0, -1);
}

// One card as an SVG element string: w x h pixels, with data-card (its id) and its name as a tooltip.
function cardSVG(meta, id, w = 60, h = 90) {
  const card = meta.cards[id];
  const colour = SUIT_COLOURS[meta.pack][card.suit];
  const trump = card.suit === 4, excuse = card.suit === 5;
  const fill = trump ? "#efe6fb" : excuse ? "#fff3d6" : "#fffdf6";
  const rank = esc(rankText(card.name, card.suit));
  const big = rank.length > 4 ? 11 : 15;
  let inner = `<rect x="1" y="1" width="58" height="88" rx="6" fill="${fill}" stroke="#333" stroke-width="1.5"/>`;
  inner += `<text x="6" y="17" font-size="${big}" font-weight="bold" fill="${colour}" font-family="serif">${rank}</text>`;
  if (trump || excuse) {
    inner += `<path d="M30 38l4 9 10 1-8 6 3 10-9-6-9 6 3-10-8-6 10-1z" fill="${colour}" opacity="0.8"/>`;
    inner += `<text x="30" y="82" font-size="9" text-anchor="middle" fill="${colour}">${esc(meta.suit_names[card.suit])}</text>`;
  } else {
    inner += suitMark(meta.pack, card.suit, 30, 52, 13, colour);
    inner += `<text x="54" y="84" font-size="12" text-anchor="end" fill="${colour}" font-family="serif">${rank}</text>`;
  }
  return `<svg class="card" data-card="${id}" viewBox="0 0 60 90" width="${w}" height="${h}" role="img" ` +
    `aria-label="${esc(card.name)}"><title>${esc(card.name)}</title>${inner}</svg>`;
}
