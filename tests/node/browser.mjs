// Headless Chromium (Debian's, through playwright-core) for the page clients: a fresh profile each run,
// and the page's errors and console errors collected.
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

export async function withPage(name, options, use) {
  const profile = mkdtempSync(join(tmpdir(), `${name}-`));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: FLAGS,
    ...options,
  });
  try {
    const page = browser.pages()[0] ?? (await browser.newPage());
    const consoleErrors = [];
    page.on("pageerror", (error) => consoleErrors.push(String(error)));
    page.on("console", (m) => m.type() === "error" && consoleErrors.push(m.text()));
    return await use(page, consoleErrors);
  } finally {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  }
}
