// Drives the dev chat page's attachment picker in headless Chromium: a file of a type the service
// refuses, then one it takes (declared, uploaded straight to S3 with the presigned POST), a message
// sent with it, the conversation opened again; prints what the page showed.
//
//   node chat_attachments.mjs <base-url> <screenshot.png> <caller-id> <message> <refused file> <file>
import { newConversationAs, settled, texts, withPage } from "./browser.mjs";

const [base, screenshot, callerId, message, refused, file] = process.argv.slice(2);

// Every status line a turn shows, in order (each StatusUpdate replaces the one before on screen).
function recordStatuses() {
  window.seenStatuses = [];
  const record = () => {
    for (const node of document.querySelectorAll(".turn .status")) {
      const text = node.textContent;
      if (text && window.seenStatuses.at(-1) !== text) window.seenStatuses.push(text);
    }
  };
  new MutationObserver(record).observe(document.querySelector("#transcript"), {
    subtree: true,
    childList: true,
    characterData: true,
  });
}

await withPage(async (page, consoleErrors) => {
  // The refused upload's 415 is an expected console error of the browser's own, not the page's.
  const expected = (text) => text.includes("415");
  await newConversationAs(page, base, callerId);
  await page.setInputFiles("#attachment-file", refused);
  await page.waitForSelector("#composer-error:not([hidden])");
  const refusal = { error: await page.textContent("#composer-error"), chips: await texts(page, ".attachment") };

  await page.setInputFiles("#attachment-file", file);
  await page.waitForSelector('.attachment[data-status="PENDING_UPLOAD"], .attachment[data-status="READY"]');
  const chips = await texts(page, ".attachment .name");
  await page.evaluate(recordStatuses);
  await page.fill("#message", message);
  await page.click("#send");
  await page.waitForSelector(".turn-footer:not(:empty), .turn .error", { timeout: 60_000 });
  await settled(page);
  await page.screenshot({ path: screenshot, fullPage: true });
  const sent = {
    user: await texts(page, ".bubble.user .text"),
    attached: await texts(page, ".bubble.user .attached"),
    chipsAfter: await texts(page, ".attachment"),
    statuses: await page.evaluate(() => window.seenStatuses),
    answer: await page.textContent(".turn .answer"),
    errors: await texts(page, ".turn .error"),
    composerError: await page.textContent("#composer-error"),
  };
  await page.click("#conversations .conversation .open");
  await page.waitForSelector("#transcript .bubble.user .attached");
  const reopened = { attached: await texts(page, ".bubble.user .attached") };
  const unexpected = consoleErrors.filter((text) => !expected(text));
  console.log(JSON.stringify({ refusal, chips, ...sent, reopened, consoleErrors: unexpected }));
});
