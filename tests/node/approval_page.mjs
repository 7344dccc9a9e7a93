// Drives the dev chat page in headless Chromium through an approval: sends a message whose turn holds a
// tool call, decides it on the approval card (with a reason), waits for the continuation to complete,
// and prints what the page showed.
//
//   node approval_page.mjs <base-url> <caller-id> <message> <claims JSON> <approve|deny> <reason>
import { newConversationAs, texts as textsOf, withPage } from "./browser.mjs";

const [base, callerId, message, claims, decision, reason] = process.argv.slice(2);
await withPage(async (page, consoleErrors) => {
  await newConversationAs(page, base, callerId);
  await page.fill("#caller-claims", claims); // read for each request: the turn's tools get its accountId
  await page.fill("#message", message);
  await page.click("#send");
  await page.waitForSelector(".approval-card button", { timeout: 60_000 });
  await page.waitForSelector(".turn-footer:not(:empty)"); // the asking turn's Completed follows the card
  const texts = (selector) => textsOf(page, selector);
  const asked = { card: await texts(".approval-card .preview-title"), footer: await texts(".turn-footer") };
  await page.fill(".approval-card input", reason);
  await page.click(`.approval-card button:text("${decision === "approve" ? "Approve" : "Deny"}")`);
  await page.waitForFunction(() => document.querySelectorAll(".turn-footer:not(:empty)").length === 2, null, {
    timeout: 60_000,
  });
  console.log(
    JSON.stringify({
      asked,
      toolCards: await texts(".tool-card summary"),
      answers: await texts(".turn .answer"),
      footers: await texts(".turn-footer"),
      errors: await texts(".turn .error"),
      consoleErrors,
    }),
  );
});
