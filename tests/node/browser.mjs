// Headless Chromium (Debian's, through playwright-core) for the page tests: one fresh profile at the
// viewport asked for, the page's console errors collected, every request that would leave 127.0.0.1
// recorded and refused, dialogs (a delete's confirm) accepted, everything closed after.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

// Without the background-networking flags Chromium keeps dialling out, and a closed network refuses it.
const FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const LOCAL = new Set(["127.0.0.1"]);

// Runs `drive(page, consoleErrors, offsite)` in a new browser and returns what it returns; `offsite`
// lists the URLs of requests that would have left 127.0.0.1 (none reached the network).
export async function withPage(drive, { width = 1200, height = 1000 } = {}) {
  const profile = mkdtempSync(join(tmpdir(), "chat-page-"));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: FLAGS,
    viewport: { width, height },
  });
  const offsite = [];
  await browser.route("**/*", (route) => {
    const url = new URL(route.request().url());
    if (url.protocol === "data:" || LOCAL.has(url.hostname)) return route.continue();
    offsite.push(url.href);
    return route.abort();
  });
  try {
    const page = browser.pages()[0] ?? (await browser.newPage());
    const consoleErrors = [];
    page.on("pageerror", (error) => consoleErrors.push(String(error)));
    page.on("console", (m) => m.type() === "error" && consoleErrors.push(m.text()));
    page.on("dialog", (dialog) => dialog.accept());
    try {
      return await drive(page, consoleErrors, offsite);
    } catch (error) {
      // What the page showed when it went wrong, for the test's failure message.
      const shown = await page.evaluate(() => document.querySelector("main")?.innerText).catch(() => "");
      throw new Error(`${error.message}\n--- the page showed:\n${shown}\n--- console: ${consoleErrors.join(" | ")}`);
    }
  } finally {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

// The conversations' drawer, opened where it is one (a narrow screen).
export async function openSidebar(page) {
  if ((await page.isVisible("#menu")) && !(await page.evaluate(() => document.body.classList.contains("menu-open")))) {
    await page.click("#menu");
  }
}

export async function closeSidebar(page) {
  if (await page.evaluate(() => document.body.classList.contains("menu-open"))) await page.click("#menu");
}

// The page as `callerId`, in a new conversation.
export async function newConversationAs(page, base, callerId) {
  await page.goto(`${base}/`);
  await page.fill("#caller-id", callerId);
  await page.press("#caller-id", "Tab"); // change: the page reloads the caller's conversations and tools
  await openSidebar(page);
  await page.click("#new-conversation");
  await page.waitForSelector("#send:not([disabled])");
}

// Runs `action` and waits for the turn it starts to end (a footer or an error on a turn not seen before),
// and then for the page's own refresh after it (the conversation list and memory panel redrawn, ~1.5 s
// on), so that a test's next click is not on a list about to be replaced.
export async function newTurn(page, action) {
  await page.$$eval(".turn", (turns) => turns.forEach((t) => (t.dataset.seen = "1")));
  await action();
  const fresh = ".turn:not([data-seen])";
  await page.waitForSelector(`${fresh} .turn-footer:not(:empty), ${fresh} .error, #composer-error:not([hidden])`, {
    timeout: 60_000,
  });
  if (await page.isVisible("#composer-error")) throw new Error(`refused: ${await page.textContent("#composer-error")}`);
  await settled(page);
}

// Waits until no turn is running and no refresh after one is still to come (<body data-refreshing>).
export const settled = (page) =>
  page.waitForFunction(() => !document.body.dataset.refreshing, null, { polling: 100, timeout: 30_000 });

// Sends `message` and waits for its turn to end.
export const send = (page, message) =>
  newTurn(page, async () => {
    await page.fill("#message", message);
    await page.click("#send");
  });

export const texts = (page, selector) =>
  page.$$eval(selector, (nodes) => nodes.map((n) => n.textContent.trim()));
