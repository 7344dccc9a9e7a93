// Drives the dev chat page in headless Chromium (Debian's, through playwright-core): sets the caller,
// creates a conversation, sends a message with a context, waits for the turn to complete, saves a
// screenshot, opens the conversation again from the list and prints what the page showed.
//
//   node chat_page.mjs <base-url> <screenshot.png> <caller-id> <message> <context JSON>
import { newConversationAs, texts as textsOf, withPage } from "./browser.mjs";

const [base, screenshot, callerId, message, context] = process.argv.slice(2);

await withPage(async (page, consoleErrors) => {
  await newConversationAs(page, base, callerId);
  await page.click("#tools-panel summary");
  await page.waitForSelector("#tools li");
  await page.click("#composer details summary");
  await page.fill("#context", context);
  await page.fill("#message", message);
  await page.click("#send");
  await page.waitForSelector(".turn-footer:not(:empty), .turn .error", { timeout: 60_000 });
  await page.click(".tool-card summary"); // the first tool call's arguments and result, for the picture
  await page.screenshot({ path: screenshot, fullPage: true });

  const texts = (selector) => textsOf(page, selector);
  const streamed = {
    title: await page.title(),
    health: await page.textContent("#health"),
    tools: await texts("#tools li .name"),
    conversations: await texts("#conversations li"),
    user: await texts(".bubble.user"),
    toolCards: await texts(".tool-card summary"),
    previews: await texts(".preview-card li"),
    answer: await page.textContent(".turn .answer"),
    sources: await texts(".sources li"),
    footer: await page.textContent(".turn-footer"),
    errors: await texts(".turn .error"),
  };
  // Picking the conversation again shows it as stored.
  await page.click("#conversations li");
  await page.waitForSelector("#transcript .stored-tool");
  const reopened = { bubbles: await texts("#transcript .bubble"), storedTools: await texts(".stored-tool") };
  console.log(JSON.stringify({ ...streamed, reopened, consoleErrors }));
});
