// The dev chat page reloaded while its turn runs: once the answer's first text is on screen the page is
// reloaded; it reopens the conversation and resumes the turn (its events replayed, then followed).
// Prints {"resumed": true} once the replayed text is back on screen, then what the page showed.
//
//   node reload_page.mjs <base-url> <caller-id> <message>
import { newConversationAs, texts, withPage } from "./browser.mjs";

const [base, callerId, message] = process.argv.slice(2);
await withPage(async (page, consoleErrors, offsite) => {
  await newConversationAs(page, base, callerId);
  await page.fill("#message", message);
  await page.click("#send");
  await page.waitForSelector(".turn .answer:not(:empty)");
  const before = await page.textContent(".turn .answer");
  await page.reload();
  await page.waitForSelector(".turn .answer:not(:empty)", { timeout: 30_000 });
  console.log(JSON.stringify({ resumed: true }));
  await page.waitForSelector(".turn .turn-footer:not(:empty)", { timeout: 60_000 });
  console.log(
    JSON.stringify({
      before,
      user: await texts(page, ".bubble.user .text"),
      answers: await texts(page, ".turn .answer"),
      footer: await page.textContent(".turn .turn-footer"),
      running: await page.evaluate(() => localStorage.getItem("runningTurn")),
      consoleErrors,
      offsite,
    }),
  );
});
