// Asks the parity test's worker (tests/js/workers/training_parity.js, served at `url`)
// for `kind` with `data`: the first call starts it, through the page's own worker client,
// and loads TensorFlow.js into it with the open panel's files.
async ([url, kind, data]) => {
  if (!window.parityWorker_) {
    const {WorkerClient} = await import(new URL("../lib/worker_client.js", url).href);
    const panel = window.attentionBook.training;
    const client = new WorkerClient(url);
    const base = new URL("tfjs/", new URL(panel.static, document.baseURI)).href;
    window.parityWorker_ = client.ask("load", {files: panel.files, base}).then(() => client);
  }
  return (await window.parityWorker_).ask(kind, data);
}
