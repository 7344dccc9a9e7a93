// Drives the dev chat page in headless Chromium at one viewport, as a user would, through everything
// it offers: a turn with tools, a preview and a Markdown answer (with HTML in it, never run) whose
// citation opens its passage; feedback; the automatic title in the list; regenerate; edit; stop; an
// approval; an error the service answers; rename, search and delete; the API docs page; the caller cleared. Saves screenshots and
// prints what the page showed, with every request that would have left 127.0.0.1.
//
//   node chat_page.mjs <base-url> <screenshot-dir> <width>x<height> <caller-id> <context JSON> <questions JSON>
import { closeSidebar, newConversationAs, newTurn, openSidebar, send, settled, texts, withPage } from "./browser.mjs";

const [base, shots, size, callerId, context, questionsJson] = process.argv.slice(2);
const [width, height] = size.split("x").map(Number);
const questions = JSON.parse(questionsJson);
const shot = (page, name) => page.screenshot({ path: `${shots}/${name}-${width}.png`, fullPage: true });
const last = ".turn.last";

await withPage(
  async (page, consoleErrors, offsite) => {
    const out = {};
    await newConversationAs(page, base, callerId);
    await page.click("#composer details summary");
    await page.fill("#context", context);

    // A turn with tools and a preview; the answer is Markdown with HTML that must stay text.
    await send(page, questions.first);
    out.first = {
      user: await texts(page, ".bubble.user .text"),
      userHtml: await page.$$eval(".bubble.user .text *", (nodes) => nodes.length),
      toolCards: await texts(page, ".tool-card summary"),
      previews: await texts(page, ".preview-card li"),
      headings: await texts(page, `${last} .answer h2`),
      strong: await texts(page, `${last} .answer strong`),
      code: await texts(page, `${last} .answer code`),
      items: await texts(page, `${last} .answer li`),
      answerText: await page.textContent(`${last} .answer`),
      injected: await page.$$eval(`${last} .answer img, ${last} .answer script`, (nodes) => nodes.length),
      pwned: await page.evaluate(() => window.__pwned ?? null),
      sources: await texts(page, `${last} .sources li`),
      footer: await page.textContent(`${last} .turn-footer`),
    };
    await shot(page, "chat");

    // A citation opens its passage.
    await page.click(`${last} .answer .citation`);
    await page.waitForSelector("#passage[open]");
    out.passage = {
      title: await page.textContent("#passage-title"),
      key: await page.textContent("#passage-key"),
      text: await page.textContent("#passage-text"),
    };
    await shot(page, "passage");
    await page.click("#passage-close");

    // Feedback, then the automatic title in the list.
    await page.click(`${last} .feedback-up`);
    await page.waitForSelector(`${last} .feedback-up[aria-pressed="true"]`);
    out.feedbackMessage = await page.getAttribute(last, "data-message-id");
    await page.waitForFunction(() => document.querySelector("#conversation-title").textContent !== "Untitled", null, {
      timeout: 15_000,
    });
    await openSidebar(page);
    out.titles = await texts(page, "#conversations .title");
    out.heading = await page.textContent("#conversation-title");
    await shot(page, "list");
    await closeSidebar(page);

    // Regenerate the answer, then edit the question.
    await newTurn(page, () => page.click(`${last} .regenerate`));
    out.regenerated = { answers: await texts(page, ".turn .answer"), turns: await page.$$eval(".turn", (t) => t.length) };
    await page.click(".bubble.user.last .edit");
    await page.fill(".edit-box", questions.edited);
    await newTurn(page, () => page.click(".edit-save"));
    out.edited = { user: await texts(page, ".bubble.user .text"), answers: await texts(page, ".turn .answer") };

    // Stop a turn once its first text is on screen.
    await page.fill("#message", questions.stopped);
    await page.click("#send");
    await page.waitForSelector(`${last} .answer:not(:empty)`);
    await newTurnEnd(page, () => page.click("#stop"));
    out.stopped = { footer: await page.textContent(`${last} .turn-footer`), answer: await page.textContent(`${last} .answer`) };

    // An approval, approved on its card.
    await send(page, questions.approval);
    out.approval = { card: await texts(page, ".approval-card .preview-title") };
    await shot(page, "approval");
    await newTurn(page, () => page.click(".approval-card .approve"));
    out.approval.toolCards = await texts(page, `${last} .tool-card summary`);
    out.approval.answer = await page.textContent(`${last} .answer`);

    // A question the service refuses: its error is shown under the composer.
    await page.fill("#message", "word ".repeat(6_500));
    await page.click("#send");
    await page.waitForSelector("#composer-error:not([hidden])");
    out.refused = await page.textContent("#composer-error");
    await shot(page, "error");
    await settled(page); // the list redrawn after the refused turn, before it is renamed

    // Rename, search, delete.
    await openSidebar(page);
    await page.click("#conversations .conversation.active .rename");
    await page.fill("#conversations .rename-input", "Orders and workflows");
    await page.press("#conversations .rename-input", "Enter");
    await page.waitForFunction(() => document.querySelector("#conversations .title")?.textContent === "Orders and workflows");
    out.renamed = { titles: await texts(page, "#conversations .title"), heading: await page.textContent("#conversation-title") };
    await page.fill("#search", "workflows");
    await page.waitForFunction(() => document.querySelectorAll("#conversations .conversation").length === 1);
    out.found = await texts(page, "#conversations .title");
    await page.fill("#search", "nothing like it");
    await page.waitForSelector("#conversations .empty");
    out.notFound = await texts(page, "#conversations li");
    await page.fill("#search", "");
    await page.waitForSelector("#conversations .conversation");
    await page.click("#conversations .conversation .delete");
    await page.waitForFunction(
      () => document.querySelector("#conversations .empty") && !document.querySelector("#transcript").children.length,
    );
    out.deleted = { list: await texts(page, "#conversations li"), transcript: await page.$$eval("#transcript > *", (n) => n.length) };

    await closeSidebar(page);

    // The API docs page: Swagger UI from this server's own files.
    const docs = await page.context().newPage();
    await docs.goto(`${base}/docs`);
    await docs.waitForSelector(".swagger-ui .info .title", { timeout: 30_000 });
    out.docsTitle = (await docs.textContent(".swagger-ui .info .title")).trim();
    await docs.screenshot({ path: `${shots}/docs-${width}.png` });
    await docs.close();

    // The caller cleared: nothing of theirs stays.
    await page.fill("#caller-id", "");
    await page.press("#caller-id", "Tab");
    await openSidebar(page);
    await page.waitForSelector("#conversations .empty");
    out.cleared = { list: await texts(page, "#conversations li"), transcript: await page.$$eval("#transcript > *", (n) => n.length) };

    out.overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    console.log(JSON.stringify({ ...out, consoleErrors, offsite }));
  },
  { width, height },
);

// The stopped turn ends (its footer) after `action`, on the same turn.
async function newTurnEnd(page, action) {
  await action();
  await page.waitForSelector(`${last} .turn-footer:not(:empty)`, { timeout: 60_000 });
}
