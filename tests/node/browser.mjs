// Headless Chromium (Debian's, through playwright-core) for the page tests: one fresh profile, the
// page's console errors collected, everything closed after.
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

// Runs `drive(page, consoleErrors)` in a new browser and returns what it returns.
export async function withPage(drive) {
  const profile = mkdtempSync(join(tmpdir(), "chat-page-"));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: FLAGS,
    viewport: { width: 1200, height: 1000 },
  });
  try {
    const page = browser.pages()[0] ?? (await browser.newPage());
    const consoleErrors = [];
    page.on("pageerror", (error) => consoleErrors.push(String(error)));
    page.on("console", (m) => m.type() === "error" && consoleErrors.push(m.text()));
    return await drive(page, consoleErrors);
  } finally {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

// The page as `callerId`, in a new conversation.
export async function newConversationAs(page, base, callerId) {
  await page.goto(`${base}/`);
  await page.fill("#caller-id", callerId);
  await page.press("#caller-id", "Tab"); // change: the page reloads the caller's conversations and tools
  await page.click("#new-conversation");
  await page.waitForSelector("#send:not([disabled])");
}

export const texts = (page, selector) =>
  page.$$eval(selector, (nodes) => nodes.map((n) => n.textContent.trim()));
