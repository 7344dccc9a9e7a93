// Drives the chat page's memory panel in headless Chromium at one viewport: a temporary chat (marked as
// one) whose turn is not remembered; a turn in a conversation listed with its kinds, as text, a page at
// a time ("Show more"); a search
// putting its best match first; forget one; another caller's panel showing none of it; forget all; the
// caller cleared. Prints what the page showed.
//
//   node memory_page.mjs <base-url> <screenshot> <width>x<height> <caller-id> <other-caller-id> <questions JSON>
import { closeSidebar, newConversationAs, openSidebar, send, texts, withPage } from "./browser.mjs";

const [base, screenshot, size, callerId, otherId, questionsJson] = process.argv.slice(2);
const [width, height] = size.split("x").map(Number);
const questions = JSON.parse(questionsJson);

// What the panel lists: "<kind>: <text>" per fragment, or its empty line ("Show more" aside).
const listed = (page) =>
  page.$$eval("#memory li:not(.more)", (items) =>
    items.map((li) => (li.classList.contains("empty") ? li.textContent : `${li.querySelector(".kind").textContent}: ${li.querySelector(".text").textContent}`)),
  );

// Waits until the service lists `count` fragments of the caller's (they are indexed after the turn's end).
const remembered = (page, count) =>
  page.waitForFunction(
    async (n) => {
      const response = await fetch("/api/v1/memory", { headers: { "X-Caller-Id": document.querySelector("#caller-id").value } });
      return (await response.json()).items.length === n;
    },
    count,
    { polling: 200, timeout: 20_000 },
  );

// The panel drawn afresh (opened again) and waited on until it holds `count` items.
async function reopen(page, count) {
  await openSidebar(page);
  if (await page.evaluate(() => document.querySelector("#memory-panel").open)) await page.click("#memory-panel summary");
  await page.click("#memory-panel summary");
  await page.waitForFunction((n) => document.querySelectorAll("#memory li").length === n, count);
}

await withPage(
  async (page, consoleErrors, offsite) => {
    const out = {};
    // Every refused or failed response, to tell the page's own requests from the health probe's.
    const failures = [];
    page.on("response", (r) => r.status() >= 400 && failures.push(`${r.status()} ${new URL(r.url()).pathname}`));
    // A temporary chat first: marked in the list and the header; its turn adds nothing to memory.
    await newConversationAs(page, base, callerId);
    await openSidebar(page);
    await page.click("#new-temporary");
    await page.waitForSelector("#temporary-badge:not([hidden])");
    out.temporaryBadges = await texts(page, "#conversations .badge.temporary");
    await closeSidebar(page);
    await send(page, questions.temporary);

    // Then a turn in an ordinary conversation: listed with its kinds, as text.
    await openSidebar(page);
    await page.click("#new-conversation");
    await page.waitForSelector("#temporary-badge[hidden]", { state: "attached" });
    await closeSidebar(page);
    await send(page, questions.remembered);
    await remembered(page, 2);
    await reopen(page, 2);
    out.listed = await listed(page);
    out.html = await page.$$eval("#memory .text *", (nodes) => nodes.length);
    await page.screenshot({ path: screenshot, fullPage: true });

    // A page at a time: with pages of one fragment, the newest and "Show more", which adds the next.
    await page.evaluate(() => (document.querySelector("#memory-panel").dataset.pageSize = "1"));
    await reopen(page, 2);
    await page.waitForSelector("#memory li.more"); // the list drawn anew, not the one before
    out.firstPage = { items: await listed(page), more: await texts(page, "#memory li.more button") };
    await page.click("#memory li.more button");
    await page.waitForFunction(() => document.querySelectorAll("#memory li.fragment").length === 2);
    out.secondPage = { items: await listed(page), more: await texts(page, "#memory li.more button") };
    await page.evaluate(() => delete document.querySelector("#memory-panel").dataset.pageSize);
    await reopen(page, 2);
    await page.waitForFunction(() => document.querySelectorAll("#memory li.fragment").length === 2 && !document.querySelector("#memory li.more"));

    // A search ranks the best match first.
    await page.fill("#memory-search", questions.remembered);
    await page.waitForFunction(() => document.querySelector("#memory li .kind")?.textContent === "you said");
    out.searched = await listed(page);
    await page.fill("#memory-search", "");
    await page.waitForFunction(() => document.querySelector("#memory li .kind")?.textContent === "answered");

    // Forget one: the answer goes, what was said stays.
    await page.click("#memory li:first-child .forget");
    await page.waitForFunction(() => document.querySelectorAll("#memory li.fragment").length === 1);
    out.afterForget = await listed(page);
    out.apiAfterForget = await page.evaluate(async () => {
      const response = await fetch("/api/v1/memory", { headers: { "X-Caller-Id": document.querySelector("#caller-id").value } });
      return (await response.json()).items.map((f) => f.kind);
    });

    // Another caller sees none of it; then back, forget all.
    await page.fill("#caller-id", otherId);
    await page.press("#caller-id", "Tab");
    out.otherClosed = await page.evaluate(() => document.querySelector("#memory-panel").open);
    await reopen(page, 1);
    out.other = await listed(page);
    await page.fill("#caller-id", callerId);
    await page.press("#caller-id", "Tab");
    await reopen(page, 1);
    await page.click("#memory-panel .forget-all"); // its confirm is accepted
    await page.waitForSelector("#memory li.empty");
    out.afterForgetAll = await listed(page);

    // The caller cleared: the panel empties and closes.
    await page.fill("#caller-id", "");
    await page.press("#caller-id", "Tab");
    out.cleared = { open: await page.evaluate(() => document.querySelector("#memory-panel").open), items: await listed(page) };
    out.overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    out.consoleErrors = consoleErrors;
    out.failures = failures;
    out.offsite = offsite;
    console.log(JSON.stringify(out));
  },
  { width, height },
);
