// A small Markdown renderer for answers: DOM nodes built with createElement and textContent only, so
// no HTML in a message is ever parsed, let alone run. Blocks: headings, paragraphs, fenced code,
// lists, quotes, rules. Inline: code, bold, italic, links (http, https, mailto and same-site paths
// only) and citations [source:documentId#chunkIndex], which become links a caller can open.
"use strict";

const INLINE =
  /(`[^`\n]+`)|(\[source:[^\]\s]+\])|(\*\*(?=\S)[\s\S]*?\S\*\*)|(\*(?=\S)[^*\n]*?\S\*|(?<![\w])_(?=\S)[^_\n]*?\S_(?!\w))|(\[[^\]\n]+\]\([^)\s]+\))/;
const SAFE_URL = /^(https?:|mailto:|\/(?!\/))/i;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// Inline Markdown as nodes appended to `parent`; `cite(key)` makes a citation's node.
function inline(parent, text, cite) {
  let rest = text;
  while (rest) {
    const match = INLINE.exec(rest);
    if (!match) {
      parent.append(document.createTextNode(rest));
      return;
    }
    if (match.index) parent.append(document.createTextNode(rest.slice(0, match.index)));
    const [token, code, citation, bold, italic, link] = match;
    if (code) parent.append(el("code", "", code.slice(1, -1)));
    else if (citation) parent.append(cite(citation.slice(8, -1)));
    else if (bold) inline(parent.appendChild(el("strong")), bold.slice(2, -2), cite);
    else if (italic) inline(parent.appendChild(el("em")), italic.slice(1, -1), cite);
    else if (link) {
      const [, label, href] = /^\[([^\]]+)\]\(([^)\s]+)\)$/.exec(link);
      if (SAFE_URL.test(href)) {
        const anchor = el("a");
        anchor.href = href;
        anchor.target = "_blank";
        anchor.rel = "noopener noreferrer";
        inline(anchor, label, cite);
        parent.append(anchor);
      } else {
        inline(parent, label, cite);
      }
    }
    rest = rest.slice(match.index + token.length);
  }
}

const BLOCKS = {
  fence: /^\s*(```|~~~)\s*([\w+-]*)\s*$/,
  heading: /^(#{1,6})\s+(.*?)\s*#*\s*$/,
  rule: /^\s*([-*_])(\s*\1){2,}\s*$/,
  quote: /^\s*>\s?(.*)$/,
  bullet: /^\s*[-*+]\s+(.*)$/,
  numbered: /^\s*(\d{1,9})[.)]\s+(.*)$/,
};

// The nodes of `markdown`, appended to `root` (emptied first).
export function renderMarkdown(root, markdown, cite = (key) => el("span", "citation", `[${key}]`)) {
  root.replaceChildren();
  const lines = markdown.replace(/\r\n?/g, "\n").split("\n");
  let paragraph = [];
  let list = null;
  const flush = () => {
    if (paragraph.length) {
      const p = el("p");
      paragraph.forEach((line, i) => {
        if (i) p.append(el("br"));
        inline(p, line, cite);
      });
      root.append(p);
    }
    paragraph = [];
  };
  const closeList = () => {
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    let m;
    if ((m = BLOCKS.fence.exec(line))) {
      flush();
      closeList();
      const body = [];
      while (++i < lines.length && !lines[i].trim().startsWith(m[1])) body.push(lines[i]);
      const pre = el("pre");
      const code = el("code", "", body.join("\n"));
      if (m[2]) code.dataset.language = m[2];
      pre.append(code);
      root.append(pre);
    } else if (!line.trim()) {
      flush();
      closeList();
    } else if ((m = BLOCKS.heading.exec(line))) {
      flush();
      closeList();
      inline(root.appendChild(el(`h${m[1].length}`)), m[2], cite);
    } else if (BLOCKS.rule.test(line)) {
      flush();
      closeList();
      root.append(el("hr"));
    } else if ((m = BLOCKS.quote.exec(line))) {
      flush();
      closeList();
      const quoted = [m[1]];
      while (i + 1 < lines.length && (m = BLOCKS.quote.exec(lines[i + 1]))) {
        quoted.push(m[1]);
        i++;
      }
      const block = el("blockquote");
      renderMarkdown(block, quoted.join("\n"), cite);
      root.append(block);
    } else if ((m = BLOCKS.bullet.exec(line)) || (m = BLOCKS.numbered.exec(line))) {
      flush();
      const ordered = BLOCKS.numbered.test(line) && !BLOCKS.bullet.test(line);
      const tag = ordered ? "ol" : "ul";
      if (!list || list.tagName.toLowerCase() !== tag) {
        list = root.appendChild(el(tag));
        if (ordered && m[1] !== "1") list.start = Number(m[1]);
      }
      inline(list.appendChild(el("li")), ordered ? m[2] : m[1], cite);
    } else if (list && /^\s{2,}\S/.test(line)) {
      inline(list.lastElementChild, ` ${line.trim()}`, cite); // a list item's continued line
    } else {
      closeList();
      paragraph.push(line);
    }
  }
  flush();
}
