// hashproof pages: local times, copy buttons, and hashing files in the browser (Web Crypto). Files are
// read and hashed here; only the hash is ever sent, and only when the person asks for a proof.
'use strict';

(function () {
  /** Larger files are better hashed with sha256sum: the browser would hold the whole file in memory. */
  const MAX_FILE_BYTES = 1024 * 1024 * 1024;

  function byId(id) {
    return document.getElementById(id);
  }

  function showLocalTimes() {
    for (const target of document.querySelectorAll('[data-local-for]')) {
      const date = new Date(target.getAttribute('data-local-for'));
      if (Number.isNaN(date.getTime())) continue;
      const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
      const text = date.toLocaleString(undefined, { dateStyle: 'long', timeStyle: 'medium' });
      target.textContent = `(${text}, your time${zone ? `, ${zone}` : ''})`;
    }
  }

  function enableCopyButtons() {
    for (const button of document.querySelectorAll('button[data-copy]')) {
      const source = byId(button.getAttribute('data-copy'));
      if (!source) continue;
      button.hidden = false;
      button.addEventListener('click', async () => {
        try {
          await navigator.clipboard.writeText(source.textContent);
          button.textContent = 'Copied';
        } catch {
          const range = document.createRange();
          range.selectNodeContents(source);
          window.getSelection().removeAllRanges();
          window.getSelection().addRange(range);
          button.textContent = 'Selected';
        }
        setTimeout(() => (button.textContent = 'Copy'), 2000);
      });
    }
  }

  /** `sha256:` + lowercase hex of the file's SHA-256, computed locally. */
  async function hashFile(file) {
    if (!window.crypto || !window.crypto.subtle) {
      throw new Error('This browser cannot hash files here: Web Crypto needs an https:// page.');
    }
    if (file.size > MAX_FILE_BYTES) {
      throw new Error(
        'This file is larger than 1 GiB: hash it with sha256sum instead (see the API quickstart).',
      );
    }
    const digest = await window.crypto.subtle.digest('SHA-256', await file.arrayBuffer());
    return `sha256:${hex(digest)}`;
  }

  function hex(buffer) {
    return Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, '0')).join('');
  }

  /**
   * The idempotency key `hashproof stamp` uses for this hash and label: `stamp-` + the first 40 hex digits
   * of SHA-256(UTF-8 of contentHash + "\n" + label). The same file and label give the same key, so the
   * service returns the proof it already made (from this page or from the command), never a second one.
   */
  async function stampKey(contentHash, label) {
    const bytes = new window.TextEncoder().encode(`${contentHash}\n${label}`);
    return `stamp-${hex(await window.crypto.subtle.digest('SHA-256', bytes)).slice(0, 40)}`;
  }

  function setStatus(element, text, kind) {
    element.textContent = text;
    element.className = `status${kind ? ` status-${kind}` : ''}`;
  }

  function enableCompare() {
    for (const input of document.querySelectorAll('input[data-compare]')) {
      const result = byId(input.getAttribute('aria-describedby'));
      input.addEventListener('change', async () => {
        const file = input.files && input.files[0];
        if (!file || !result) return;
        setStatus(result, `Hashing ${file.name}…`);
        try {
          const hash = await hashFile(file);
          if (hash === input.getAttribute('data-compare')) {
            setStatus(result, `Match: ${file.name} has exactly the content hash of this proof.`, 'ok');
          } else {
            setStatus(result, `No match: ${file.name} hashes to ${hash}, a different content.`, 'bad');
          }
        } catch (error) {
          setStatus(result, error.message, 'bad');
        }
      });
    }
  }

  function enableDemo() {
    const form = byId('demo-form');
    if (!form) return;
    const isPaid = form.getAttribute('data-mode') === 'x402';
    const fileInput = byId('demo-file');
    const labelInput = byId('demo-label');
    const hashOutput = byId('demo-hash');
    const status = byId('demo-status');
    const submit = byId('demo-submit');
    const existing = byId('demo-existing');
    const proofLink = byId('demo-proof');
    let contentHash = null;

    form.hidden = false;
    labelInput.addEventListener('input', () => (proofLink.hidden = true));
    fileInput.addEventListener('change', async () => {
      const file = fileInput.files && fileInput.files[0];
      contentHash = null;
      proofLink.hidden = true;
      if (submit) submit.disabled = true;
      hashOutput.textContent = '';
      existing.hidden = true;
      if (!file) return;
      setStatus(status, `Hashing ${file.name} in your browser…`);
      try {
        contentHash = await hashFile(file);
      } catch (error) {
        setStatus(status, error.message, 'bad');
        return;
      }
      hashOutput.textContent = contentHash;
      existing.href = `/proofs?q=${encodeURIComponent(contentHash)}`;
      existing.hidden = false;
      for (const slot of document.querySelectorAll('[data-fill-hash]')) slot.textContent = contentHash;
      if (isPaid) {
        setStatus(status, 'Hashed. Creating a proof of it is paid on this instance: see below.', 'ok');
      } else {
        submit.disabled = false;
        setStatus(status, 'Hashed. Give it a label and create the proof.', 'ok');
      }
    });

    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      if (isPaid || !contentHash) return;
      const label = labelInput.value.trim();
      if (!label) {
        setStatus(status, 'Give the proof a label: a short public title.', 'bad');
        labelInput.focus();
        return;
      }
      submit.disabled = true;
      setStatus(status, 'Creating the proof…');
      try {
        // One key per (hash, label): a retry, or the same file and label again, returns the same proof.
        const idempotencyKey = await stampKey(contentHash, label);
        const response = await fetch('/api/proof/notarize', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ contentHash, label, idempotencyKey }),
        });
        const answer = await response.json();
        if (response.ok && answer.links && answer.idempotentReplay) {
          const when = new Date(answer.proof.timestamp).toLocaleString();
          setStatus(
            status,
            `Already stamped: this file with this label was proven on ${when}. No new proof was made.`,
            'ok',
          );
          proofLink.href = answer.links.proof;
          proofLink.hidden = false;
          submit.disabled = false;
          return;
        }
        if (response.ok && answer.links) {
          setStatus(status, 'Proof created. Opening its page…', 'ok');
          window.location.assign(answer.links.proof);
          return;
        }
        const message = answer.error ? answer.error.message : `The service answered ${response.status}`;
        setStatus(status, message, 'bad');
      } catch {
        setStatus(
          status,
          'The service could not be reached. Try again: the same proof will be returned.',
          'bad',
        );
      }
      submit.disabled = false;
    });
  }

  showLocalTimes();
  enableCopyButtons();
  enableCompare();
  enableDemo();
})();
