/// The web chat's assets (served by WebApp at `/`, `/app.css`, `/app.js`): plain HTML, CSS and
/// JavaScript with nothing loaded from elsewhere, so the app works with no internet access.
enum WebAssets {
    /// The page: the app's screens, shown and hidden by app.js.
    static let indexHTML = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>lanchat</title>
<link rel="stylesheet" href="/app.css">
<script src="/app.js" defer></script>
</head>
<body>
<a class="skip" href="#composer-text">Skip to the message box</a>
<div id="signin" class="signin" hidden>
  <h1>lanchat</h1>
  <p id="signin-reason">This browser is not signed in to the node.</p>
  <p>In a terminal on this machine, run <code>lanchat open</code> and open the address it prints.</p>
</div>
<div id="app" class="app" hidden>
  <header class="topbar">
    <h1 class="brand">lanchat</h1>
    <button type="button" id="profile-button" class="profile-button" aria-controls="profile" aria-expanded="false">
      <span class="avatar" id="me-avatar" aria-hidden="true"></span>
      <span id="me-name" class="me-name">Profile</span>
    </button>
  </header>
  <div class="panes">
    <nav id="sidebar" class="sidebar" aria-label="Conversations and people">
      <form id="search-form" class="search" role="search" autocomplete="off">
        <label for="search-input">Find people</label>
        <input id="search-input" type="search" placeholder="Type part of a name or email" aria-describedby="search-status" aria-controls="search-results">
      </form>
      <p id="search-status" class="search-status" role="status" aria-live="polite"></p>
      <ul id="search-results" class="list results" aria-label="People found" hidden></ul>
      <h2 id="conversations-heading" class="section-title">Conversations</h2>
      <ul id="conversation-list" class="list conversations" aria-labelledby="conversations-heading"></ul>
      <p id="conversations-empty" class="empty">No conversations yet. Find someone above to start one.</p>
    </nav>
    <main id="main" class="main" tabindex="-1">
      <section id="welcome" class="welcome" aria-label="Welcome">
        <p>Pick a conversation, or find someone to talk to.</p>
      </section>
      <section id="conversation" class="conversation" aria-labelledby="conversation-title" hidden>
        <header class="conversation-header">
          <button type="button" id="back-button" class="back" aria-label="Back to conversations">&#8592;</button>
          <span class="avatar" id="conversation-avatar" aria-hidden="true"></span>
          <h2 id="conversation-title">Conversation</h2>
        </header>
        <ol id="messages" class="messages" role="log" aria-live="polite" aria-relevant="additions" aria-label="Messages"></ol>
        <div id="drop-hint" class="drop-hint" hidden>Drop an image to send it</div>
        <form id="composer" class="composer">
          <label for="photo-input" class="photo-label" title="Send a photo">
            <svg aria-hidden="true" focusable="false" width="24" height="24" viewBox="0 0 24 24"><path fill="currentColor" d="M9 3 7.2 5H4a2 2 0 0 0-2 2v11a2 2 0 0 0 2 2h16a2 2 0 0 0 2-2V7a2 2 0 0 0-2-2h-3.2L15 3H9zm3 5a4.5 4.5 0 1 1 0 9 4.5 4.5 0 0 1 0-9zm0 2a2.5 2.5 0 1 0 0 5 2.5 2.5 0 0 0 0-5z"/></svg><span class="visually-hidden">Send a photo</span>
          </label>
          <input id="photo-input" class="visually-hidden" type="file" accept="image/png,image/jpeg,image/gif,image/webp" multiple>
          <label for="composer-text" class="visually-hidden">Message</label>
          <textarea id="composer-text" rows="1" placeholder="Write a message" aria-describedby="composer-help"></textarea>
          <span id="composer-help" class="visually-hidden">Enter sends; Shift+Enter starts a new line. You can also drop an image here.</span>
          <button type="submit" id="send-button">Send</button>
        </form>
      </section>
      <section id="profile" class="profile" aria-labelledby="profile-title" hidden>
        <header class="conversation-header">
          <button type="button" id="profile-back" class="back" aria-label="Back to conversations">&#8592;</button>
          <h2 id="profile-title">Your profile</h2>
        </header>
        <div class="profile-body">
          <div class="avatar large" id="profile-avatar" role="img" aria-label="Your picture"></div>
          <p class="profile-id">User id <code id="profile-id"></code></p>
          <form id="picture-form" class="picture-form">
            <label for="picture-input" class="button-like">Change picture</label>
            <input id="picture-input" class="visually-hidden" type="file" accept="image/png,image/jpeg,image/gif,image/webp">
          </form>
          <form id="name-form" class="name-form">
            <label for="first-name">First name</label>
            <input id="first-name" type="text" autocomplete="given-name" maxlength="100">
            <label for="last-name">Last name</label>
            <input id="last-name" type="text" autocomplete="family-name" maxlength="100">
            <button type="submit">Save name</button>
          </form>
          <p id="profile-status" class="profile-status" role="status" aria-live="polite"></p>
        </div>
      </section>
    </main>
  </div>
  <p id="notice" class="notice" role="alert" hidden></p>
</div>
</body>
</html>
"""#

    /// The styles: two panes, one at a time on a narrow window; light and dark.
    static let appCSS = #"""
:root {
  --bg: #f4f5f7;
  --panel: #ffffff;
  --text: #1d2330;
  --muted: #5b6474;
  --line: #d9dde4;
  --accent: #1f5fbf;
  --accent-text: #ffffff;
  --mine: #dbe8fb;
  --theirs: #ffffff;
  --badge: #c2312b;
  --focus: #f0a000;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif;
  font-size: 16px;
  color: var(--text);
  background: var(--bg);
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #15181d;
    --panel: #1e2229;
    --text: #e8ebf0;
    --muted: #a3acba;
    --line: #343a45;
    --accent: #6ea4f2;
    --accent-text: #0b1320;
    --mine: #22385a;
    --theirs: #262b34;
    --badge: #e0574f;
  }
}
* { box-sizing: border-box; }
html, body { height: 100%; margin: 0; }
body { overflow: hidden; }
[hidden] { display: none !important; }
button, input, textarea { font: inherit; color: inherit; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.visually-hidden {
  position: absolute !important; width: 1px; height: 1px; padding: 0; margin: -1px;
  overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0;
}
.skip { position: absolute; left: -999px; top: 0; background: var(--panel); padding: .5rem 1rem; z-index: 10; }
.skip:focus { left: .5rem; top: .5rem; }

.signin { max-width: 32rem; margin: 15vh auto; padding: 2rem; background: var(--panel); border-radius: 12px; border: 1px solid var(--line); }
.signin code, .profile-id code { background: var(--bg); padding: .1rem .3rem; border-radius: 4px; word-break: break-all; }

.app { display: flex; flex-direction: column; height: 100vh; height: 100dvh; }
.topbar {
  display: flex; align-items: center; justify-content: space-between; gap: 1rem;
  padding: .5rem 1rem; background: var(--accent); color: var(--accent-text);
}
.brand { font-size: 1.2rem; margin: 0; letter-spacing: .02em; }
.profile-button {
  display: flex; align-items: center; gap: .5rem; background: transparent; border: 1px solid transparent;
  color: inherit; padding: .25rem .6rem; border-radius: 999px; cursor: pointer; max-width: 60%;
}
.profile-button:hover { border-color: currentColor; }
.me-name { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }

.panes { flex: 1; display: flex; min-height: 0; }
.sidebar {
  width: 22rem; max-width: 40%; display: flex; flex-direction: column; background: var(--panel);
  border-right: 1px solid var(--line); overflow-y: auto;
}
.search { padding: .75rem 1rem .25rem; display: flex; flex-direction: column; gap: .3rem; }
.search label { font-weight: 600; font-size: .9rem; }
.search input {
  width: 100%; padding: .55rem .75rem; border: 1px solid var(--line); border-radius: 8px; background: var(--bg);
}
.search-status { margin: 0 1rem; min-height: 1.2em; font-size: .85rem; color: var(--muted); }
.section-title { font-size: .8rem; text-transform: uppercase; letter-spacing: .06em; color: var(--muted); margin: .75rem 1rem .25rem; }
.list { list-style: none; margin: 0; padding: 0; }
.list button {
  width: 100%; display: flex; align-items: center; gap: .75rem; text-align: left; padding: .6rem 1rem;
  background: transparent; border: 0; border-bottom: 1px solid var(--line); cursor: pointer;
}
.list button:hover { background: var(--bg); }
.list button[aria-current="true"] { background: var(--mine); }
.results { border-bottom: 2px solid var(--line); }
.item-text { flex: 1; min-width: 0; display: flex; flex-direction: column; }
.item-title { font-weight: 600; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.item-sub { color: var(--muted); font-size: .88rem; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.item-side { display: flex; flex-direction: column; align-items: flex-end; gap: .2rem; font-size: .8rem; color: var(--muted); }
.badge {
  min-width: 1.4rem; padding: .05rem .4rem; border-radius: 999px; background: var(--badge); color: #fff;
  font-weight: 700; text-align: center; font-size: .78rem;
}
.online-dot { width: .6rem; height: .6rem; border-radius: 50%; background: #2e9d4f; display: inline-block; }
.empty { color: var(--muted); margin: 1rem; font-size: .95rem; }

.avatar {
  flex: none; width: 2.5rem; height: 2.5rem; border-radius: 50%; background: #7c8aa5; color: #fff;
  display: inline-flex; align-items: center; justify-content: center; font-weight: 700; overflow: hidden;
  font-size: 1rem; text-transform: uppercase;
}
.avatar img { width: 100%; height: 100%; object-fit: cover; display: block; }
.topbar .avatar { width: 2rem; height: 2rem; font-size: .85rem; border: 2px solid var(--accent-text); }
.avatar.small { width: 2rem; height: 2rem; font-size: .8rem; }
.avatar.large { width: 8rem; height: 8rem; font-size: 3rem; }

.main { flex: 1; min-width: 0; display: flex; flex-direction: column; position: relative; }
.main:focus { outline: none; }
.welcome { margin: auto; color: var(--muted); padding: 2rem; text-align: center; }
.conversation, .profile { flex: 1; display: flex; flex-direction: column; min-height: 0; }
.conversation-header {
  display: flex; align-items: center; gap: .75rem; padding: .6rem 1rem; background: var(--panel);
  border-bottom: 1px solid var(--line);
}
.conversation-header h2 { font-size: 1.1rem; margin: 0; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.back {
  display: none; background: transparent; border: 1px solid var(--line); border-radius: 8px;
  padding: .2rem .6rem; cursor: pointer; font-size: 1.2rem;
}
.messages { flex: 1; overflow-y: auto; list-style: none; margin: 0; padding: 1rem; display: flex; flex-direction: column; gap: .6rem; }
.message { display: flex; gap: .5rem; align-items: flex-end; max-width: 80%; }
.message.mine { align-self: flex-end; flex-direction: row-reverse; }
.bubble { background: var(--theirs); border: 1px solid var(--line); border-radius: 14px; padding: .45rem .7rem; min-width: 0; }
.message.mine .bubble { background: var(--mine); }
.meta { display: flex; gap: .6rem; align-items: baseline; font-size: .78rem; color: var(--muted); margin-bottom: .15rem; }
.sender { font-weight: 700; color: var(--text); }
.text { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; }
.photo { display: block; max-width: min(20rem, 100%); max-height: 20rem; border-radius: 10px; margin-top: .25rem; }
.photo-pending {
  display: flex; align-items: center; gap: .5rem; width: 12rem; height: 8rem; justify-content: center;
  border-radius: 10px; background: repeating-linear-gradient(45deg, var(--bg), var(--bg) 10px, var(--line) 10px, var(--line) 20px);
  color: var(--muted); font-size: .85rem; margin-top: .25rem; text-align: center; padding: .5rem;
}
.drop-hint {
  position: absolute; inset: 3.5rem 1rem 4.5rem; border: 3px dashed var(--accent); border-radius: 14px;
  display: flex; align-items: center; justify-content: center; font-size: 1.2rem; background: color-mix(in srgb, var(--panel) 85%, transparent);
  pointer-events: none;
}
.composer { display: flex; align-items: flex-end; gap: .5rem; padding: .6rem 1rem; background: var(--panel); border-top: 1px solid var(--line); }
.composer textarea {
  flex: 1; resize: none; overflow-y: hidden; max-height: 8rem; padding: .55rem .75rem; border: 1px solid var(--line); border-radius: 10px; background: var(--bg);
}
.composer button, .name-form button, .button-like {
  background: var(--accent); color: var(--accent-text); border: 0; border-radius: 10px; padding: .55rem 1rem;
  font-weight: 600; cursor: pointer; display: inline-block;
}
.photo-label {
  cursor: pointer; padding: .45rem .5rem; border-radius: 8px; border: 1px solid var(--line); display: inline-flex; color: var(--accent);
}
.photo-label:focus-within, .button-like:focus-within { outline: 3px solid var(--focus); outline-offset: 2px; }
.composer:has(#photo-input:focus-visible) .photo-label,
.picture-form:has(#picture-input:focus-visible) .button-like { outline: 3px solid var(--focus); outline-offset: 2px; }

.profile-body { padding: 1.5rem; overflow-y: auto; display: flex; flex-direction: column; align-items: center; gap: 1rem; }
.profile-id { font-size: .85rem; color: var(--muted); text-align: center; max-width: 30rem; }
.name-form { display: grid; grid-template-columns: max-content 1fr; gap: .6rem 1rem; align-items: center; width: min(26rem, 100%); }
.name-form input { padding: .5rem .7rem; border: 1px solid var(--line); border-radius: 8px; background: var(--bg); min-width: 0; }
.name-form button { grid-column: 2; justify-self: start; }
.profile-status { min-height: 1.2em; color: var(--muted); }
.notice {
  position: fixed; bottom: 1rem; left: 50%; transform: translateX(-50%); background: #3a1f1f; color: #fff;
  padding: .6rem 1rem; border-radius: 8px; max-width: 90vw; margin: 0;
}

/* A narrow window shows one pane at a time: the list, or what was opened from it. */
@media (max-width: 720px) {
  .sidebar { width: 100%; max-width: none; border-right: 0; }
  .main { display: none; }
  .app.show-main .sidebar { display: none; }
  .app.show-main .main { display: flex; }
  .back { display: inline-block; }
  .message { max-width: 92%; }
  .me-name { max-width: 9rem; }
  .name-form { grid-template-columns: 1fr; }
  .name-form button { grid-column: 1; }
}
"""#

    /// The app: screens, streams, search, sending text and photos, the profile.
    static let appJS = #"""
// lanchat web chat: one page over the node's local API (Firebase REST and streaming, storage,
// users directory). Data requests carry the session cookie set at login; no token is in the page.
(function () {
  'use strict';

  const BUCKET = 'lanchat';
  const MAX_UPLOAD = 16 * 1024 * 1024;
  const IMAGE_TYPES = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/gif': 'gif', 'image/webp': 'webp' };
  const $ = (id) => document.getElementById(id);

  const state = {
    me: { uid: null, profile: null },
    convRoot: {},            // /conversations as streamed
    current: null,           // the open conversation id
    currentMessages: {},     // its messages, as streamed
    messageStream: null,
    messageNodes: new Map(), // message key -> {li, json}
    started: new Set(),      // conversations opened here that have no message yet
    users: new Map(),        // uid -> {at, promise}
    pictures: new Map(),     // storage path -> Promise of a loadable URL
    pictureVersion: 0,
    searchSeq: 0,
    signedOut: false,
  };

  class AuthError extends Error {}

  // ---- API ----------------------------------------------------------------------------------

  function dbPath(segments) {
    return '/' + segments.map(encodeURIComponent).join('/') + '.json';
  }
  function messagesPath(conversation) { return dbPath(['conversations', conversation, 'messages']); }
  function storagePath(ref) {
    const prefix = 'gs://' + BUCKET + '/';
    if (ref.startsWith(prefix)) return ref.slice(prefix.length);
    if (ref.startsWith('gs://')) return ref.slice(ref.indexOf('/', 5) + 1);
    return ref;
  }
  function storageURL(path) { return '/v0/b/' + BUCKET + '/o/' + encodeURIComponent(path) + '?alt=media'; }
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  async function api(method, path, body) {
    const init = { method, credentials: 'same-origin', headers: {}, cache: 'no-store' };
    if (body instanceof Blob) {
      init.body = body;
      init.headers['Content-Type'] = body.type || 'application/octet-stream';
    } else if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers['Content-Type'] = 'application/json';
    }
    const response = await fetch(path, init);
    if (response.status === 401) {
      showSignIn('Your session ended (the node may have restarted).');
      throw new AuthError('signed out');
    }
    if (!response.ok) {
      let message = 'HTTP ' + response.status;
      try { const j = await response.json(); if (j && j.error) message = j.error; } catch (e) { /* not JSON */ }
      throw new Error(message);
    }
    if (response.status === 204) return null;
    return response.json();
  }

  // Sets `value` at `segments` below `node` (null deletes; emptied objects vanish).
  function setAt(node, segments, value) {
    if (segments.length === 0) return value;
    const object = node && typeof node === 'object' ? node : {};
    const child = setAt(object[segments[0]], segments.slice(1), value);
    if (child === null || child === undefined) delete object[segments[0]]; else object[segments[0]] = child;
    return Object.keys(object).length ? object : null;
  }
  function applyEvent(root, kind, event) {
    const segments = String(event.path || '/').split('/').filter(Boolean);
    if (kind === 'put') return setAt(root, segments, event.data);
    if (kind === 'patch' && event.data && typeof event.data === 'object') {
      for (const key of Object.keys(event.data)) {
        root = setAt(root, segments.concat(key.split('/').filter(Boolean)), event.data[key]);
      }
    }
    return root;
  }

  // A Firebase event stream; reopened after the server closes it, until `close()`.
  function stream(path, onChange) {
    let source = null;
    let closed = false;
    let timer = null;
    function open() {
      source = new EventSource(path, { withCredentials: true });
      const handle = (kind) => (message) => {
        let event;
        try { event = JSON.parse(message.data); } catch (e) { return; }
        if (event && typeof event === 'object') onChange(kind, event);
      };
      source.addEventListener('put', handle('put'));
      source.addEventListener('patch', handle('patch'));
      source.onerror = () => {
        if (closed || source.readyState !== EventSource.CLOSED) return;  // the browser retries by itself
        timer = setTimeout(async () => {
          if (closed) return;
          try { await api('GET', '/.lanchat/status'); open(); } catch (e) {
            if (!(e instanceof AuthError)) timer = setTimeout(open, 3000);
          }
        }, 1500);
      };
    }
    open();
    return { close() { closed = true; clearTimeout(timer); if (source) source.close(); } };
  }

  // ---- Users and pictures -------------------------------------------------------------------

  // A user's profile, fetched again after a minute (10 s while there is none), so renames and
  // new pictures show; a change re-renders the places that show the user.
  function getUser(uid) {
    const cached = state.users.get(uid);
    if (cached && Date.now() - cached.at < (cached.value === null ? 10000 : 60000)) return cached.promise;
    if (uid === state.me.uid && cached) return cached.promise;  // streamed
    const entry = { at: Date.now(), value: cached ? cached.value : undefined, promise: null };
    const before = cached ? JSON.stringify(cached.value) : undefined;
    entry.promise = api('GET', dbPath(['users', uid])).then((profile) => {
      entry.value = profile && typeof profile === 'object' ? profile : null;
      if (before !== undefined && before !== JSON.stringify(entry.value)) userChanged(uid);
      return entry.value;
    }, () => { if (entry.value === undefined) entry.value = null; return entry.value; });
    state.users.set(uid, entry);
    return entry.promise;
  }
  function forgetUser(uid) {
    const cached = state.users.get(uid);
    if (cached && uid !== state.me.uid) { cached.at = 0; getUser(uid); }
  }
  function userChanged(uid) {
    scheduleConversationList();
    const profile = knownUser(uid);
    for (const li of document.querySelectorAll('#messages li[data-sender]')) {
      if (li.dataset.sender !== uid) continue;
      const sender = li.querySelector('.sender');
      if (sender && profileName(profile)) sender.textContent = profileName(profile);
      const avatar = li.querySelector('.avatar');
      if (avatar) fillAvatar(avatar, uid, profileName(profile));
    }
    if (state.current && otherMember(state.current) === uid) {
      $('conversation-title').textContent = conversationTitle(state.current, (state.convRoot[state.current] || {}).messages);
      fillAvatar($('conversation-avatar'), uid, profileName(profile));
    }
  }
  function knownUser(uid) {
    const cached = state.users.get(uid);
    return cached ? cached.value : undefined;
  }
  function profileName(profile) {
    if (!profile) return '';
    return [profile.first_name, profile.last_name].filter((s) => typeof s === 'string' && s.trim()).join(' ').trim();
  }
  function shortId(uid) { return uid ? uid.slice(0, 8) : '?'; }
  function myName() { return profileName(state.me.profile) || shortId(state.me.uid); }
  function initials(name) {
    const parts = String(name || '?').trim().split(/\s+/).filter(Boolean);
    if (!parts.length) return '?';
    return (Array.from(parts[0])[0] + (parts.length > 1 ? Array.from(parts[parts.length - 1])[0] : '')).toUpperCase();
  }

  // Resolves to a URL the browser can load once the file is here: while the node still fetches
  // its chunks from peers it answers 503, and a file whose entry has not arrived yet is a 404.
  function loadPicture(ref) {
    const path = storagePath(ref);
    if (!state.pictures.has(path)) {
      const url = storageURL(path) + (state.pictureVersion ? '&v=' + state.pictureVersion : '');
      const promise = (async () => {
        for (let attempt = 0; ; attempt++) {
          let status = 0;
          try {
            const response = await fetch(url, { method: 'HEAD', credentials: 'same-origin', cache: 'no-store' });
            status = response.status;
          } catch (e) { status = 0; }
          if (status === 200 || status === 405) return url;
          if (status === 401) { showSignIn('Your session ended.'); throw new AuthError('signed out'); }
          const transient = status === 503 || status === 0 || (status === 404 && attempt < 60);
          if (!transient || attempt > 600) throw new Error('picture ' + path + ': HTTP ' + status);
          await sleep(Math.min(400 + attempt * 200, 2000));
        }
      })();
      promise.catch(() => state.pictures.delete(path));
      state.pictures.set(path, promise);
    }
    return state.pictures.get(path);
  }

  // Fills a round avatar: initials at once, the picture when it is here.
  function fillAvatar(element, uid, fallbackName) {
    const show = (profile) => {
      const name = profileName(profile) || fallbackName || shortId(uid);
      if (!element.querySelector('img')) element.textContent = initials(name);
      if (profile && typeof profile.picture === 'string' && profile.picture) {
        const wanted = storagePath(profile.picture);
        if (element.dataset.picture === wanted + '#' + state.pictureVersion) return;
        element.dataset.picture = wanted + '#' + state.pictureVersion;
        loadPicture(profile.picture).then((url) => {
          const img = document.createElement('img');
          img.alt = '';
          img.src = url;
          element.replaceChildren(img);
        }, () => {});
      }
    };
    if (!uid) { element.textContent = initials(fallbackName); return; }
    const known = knownUser(uid);
    if (known !== undefined) show(known);
    else element.textContent = initials(fallbackName || '?');
    getUser(uid).then(show);
  }

  // ---- Conversations ------------------------------------------------------------------------

  // A direct conversation's id: both user ids (43 characters each) sorted, joined by "_".
  function directId(a, b) { return [a, b].sort().join('_'); }
  function otherMember(id) {
    if (id.length === 87 && id[43] === '_') {
      const a = id.slice(0, 43); const b = id.slice(44);
      if (a === state.me.uid) return b;
      if (b === state.me.uid) return a;
    }
    return null;
  }
  function conversationTitle(id, messages) {
    const other = otherMember(id);
    if (!other) return id;
    const profile = knownUser(other);
    if (profileName(profile)) return profileName(profile);
    for (const key of Object.keys(messages || {})) {
      const m = messages[key];
      if (m && m.senderId === other && m.senderName) return m.senderName;
    }
    return shortId(other);
  }

  function readKey(id) { return localStorage.getItem('lanchat.read.' + state.me.uid + '.' + id) || ''; }
  function markRead(id, key) {
    if (key && key > readKey(id)) localStorage.setItem('lanchat.read.' + state.me.uid + '.' + id, key);
  }

  function messageSummary(message) {
    if (!message || typeof message !== 'object') return '';
    const who = message.senderId === state.me.uid ? 'You: ' : '';
    if (typeof message.text === 'string' && message.text) return who + message.text.replace(/\s+/g, ' ');
    if (message.photoURL) return who + 'Photo';
    return '';
  }

  function formatTime(millis, long) {
    if (typeof millis !== 'number') return '';
    const date = new Date(millis);
    const now = new Date();
    const sameDay = date.toDateString() === now.toDateString();
    const time = date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
    if (sameDay && !long) return time;
    return date.toLocaleDateString([], { day: 'numeric', month: 'short', year: date.getFullYear() === now.getFullYear() ? undefined : 'numeric' }) + ' ' + time;
  }

  let listScheduled = false;
  function scheduleConversationList() {
    if (listScheduled) return;
    listScheduled = true;
    requestAnimationFrame(() => { listScheduled = false; renderConversationList(); });
  }

  function renderConversationList() {
    const list = $('conversation-list');
    const root = state.convRoot || {};
    const rows = [];
    const ids = new Set(Object.keys(root).concat(Array.from(state.started)));
    for (const id of ids) {
      const messages = (root[id] && root[id].messages) || {};
      const keys = Object.keys(messages).sort();
      const lastKey = keys.length ? keys[keys.length - 1] : '';
      if (id === state.current && document.visibilityState === 'visible') markRead(id, lastKey);
      const read = readKey(id);
      let unread = 0;
      for (let i = keys.length - 1; i >= 0 && keys[i] > read; i--) {
        const m = messages[keys[i]];
        if (m && m.senderId !== state.me.uid) unread++;
      }
      rows.push({ id, messages, lastKey, last: lastKey ? messages[lastKey] : null, unread });
    }
    // Newest first; conversations just started here (no message yet) on top.
    rows.sort((a, b) => (a.lastKey === b.lastKey ? (a.id < b.id ? -1 : 1) : (!a.lastKey ? -1 : !b.lastKey ? 1 : (a.lastKey > b.lastKey ? -1 : 1))));
    const focused = document.activeElement;
    const existing = new Map();
    for (const li of Array.from(list.children)) existing.set(li.dataset.id, li);
    rows.forEach((row, index) => {
      let li = existing.get(row.id);
      existing.delete(row.id);
      if (!li) {
        li = document.createElement('li');
        li.dataset.id = row.id;
        const button = document.createElement('button');
        button.type = 'button';
        button.className = 'conversation-item';
        button.addEventListener('click', () => { location.hash = '#c/' + encodeURIComponent(row.id); });
        li.appendChild(button);
      }
      const button = li.firstChild;
      const title = conversationTitle(row.id, row.messages);
      const summary = messageSummary(row.last);
      const when = row.last ? formatTime(row.last.date) : '';
      const signature = [title, summary, when, row.unread, row.id === state.current].join('\u0001');
      if (button.dataset.signature !== signature) {
        button.dataset.signature = signature;
        const avatar = document.createElement('span');
        avatar.className = 'avatar';
        avatar.setAttribute('aria-hidden', 'true');
        const other = otherMember(row.id);
        fillAvatar(avatar, other, title);
        const text = document.createElement('span');
        text.className = 'item-text';
        const t = document.createElement('span'); t.className = 'item-title'; t.textContent = title;
        const s = document.createElement('span'); s.className = 'item-sub'; s.textContent = summary || 'No messages yet';
        text.append(t, s);
        const side = document.createElement('span');
        side.className = 'item-side';
        const w = document.createElement('span'); w.textContent = when;
        side.appendChild(w);
        if (row.unread > 0) {
          const badge = document.createElement('span');
          badge.className = 'badge';
          badge.textContent = row.unread > 99 ? '99+' : String(row.unread);
          side.appendChild(badge);
        }
        button.replaceChildren(avatar, text, side);
        button.setAttribute('aria-label', title + (row.unread ? ', ' + row.unread + ' unread' : '') + (summary ? ', last message: ' + summary : '') + (when ? ', ' + when : ''));
        if (row.id === state.current) button.setAttribute('aria-current', 'true'); else button.removeAttribute('aria-current');
        if (other && knownUser(other) === undefined) getUser(other).then(scheduleConversationList);
      }
      if (list.children[index] !== li) list.insertBefore(li, list.children[index] || null);
    });
    for (const li of existing.values()) li.remove();
    $('conversations-empty').hidden = rows.length > 0;
    if (focused && focused !== document.activeElement && list.contains(focused)) focused.focus();
  }

  // ---- The open conversation ----------------------------------------------------------------

  function openConversation(id) {
    if (state.current !== id) {
      closeConversation();
      state.current = id;
      state.currentMessages = {};
      $('messages').replaceChildren();
      state.messageNodes.clear();
      const stamp = id;
      state.messageStream = stream(messagesPath(id), (kind, event) => {
        if (state.current !== stamp) return;
        state.currentMessages = applyEvent(state.currentMessages, kind, event) || {};
        renderMessages();
      });
    }
    const showTitle = () => {
      if (state.current !== id) return;
      const title = conversationTitle(id, (state.convRoot[id] || {}).messages);
      $('conversation-title').textContent = title;
      document.title = title + ' · lanchat';
      return title;
    };
    const other = otherMember(id);
    fillAvatar($('conversation-avatar'), other, showTitle());
    if (other) getUser(other).then(showTitle);
    showPane('conversation');
    scheduleConversationList();
  }

  function closeConversation() {
    if (state.messageStream) state.messageStream.close();
    state.messageStream = null;
    state.current = null;
  }

  function renderMessages() {
    const list = $('messages');
    const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 60;
    const messages = state.currentMessages || {};
    const keys = Object.keys(messages).sort();
    let mineAdded = false;
    const seen = new Set(keys);
    for (const [key, entry] of state.messageNodes) {
      if (!seen.has(key)) { entry.li.remove(); state.messageNodes.delete(key); }
    }
    keys.forEach((key, index) => {
      const message = messages[key];
      const json = JSON.stringify(message);
      let entry = state.messageNodes.get(key);
      if (!entry) {
        entry = { li: document.createElement('li'), json: '' };
        entry.li.dataset.key = key;
        state.messageNodes.set(key, entry);
        if (message && message.senderId === state.me.uid) mineAdded = true;
      }
      if (entry.json !== json) {
        entry.json = json;
        fillMessage(entry.li, message);
      }
      if (list.children[index] !== entry.li) list.insertBefore(entry.li, list.children[index] || null);
    });
    if (atBottom || mineAdded) list.scrollTop = list.scrollHeight;
    if (document.visibilityState === 'visible' && keys.length) markRead(state.current, keys[keys.length - 1]);
    scheduleConversationList();
  }

  function fillMessage(li, message) {
    if (!message || typeof message !== 'object') { li.replaceChildren(); return; }
    const mine = message.senderId === state.me.uid;
    li.className = 'message' + (mine ? ' mine' : '');
    if (typeof message.senderId === 'string') li.dataset.sender = message.senderId;
    const avatar = document.createElement('span');
    avatar.className = 'avatar small';
    avatar.setAttribute('aria-hidden', 'true');
    const bubble = document.createElement('div');
    bubble.className = 'bubble';
    const meta = document.createElement('div');
    meta.className = 'meta';
    const sender = document.createElement('span');
    sender.className = 'sender';
    const fallback = typeof message.senderName === 'string' && message.senderName ? message.senderName : shortId(message.senderId);
    sender.textContent = mine ? myName() : (profileName(knownUser(message.senderId)) || fallback);
    const time = document.createElement('time');
    if (typeof message.date === 'number') {
      time.dateTime = new Date(message.date).toISOString();
      time.textContent = formatTime(message.date);
      time.title = formatTime(message.date, true);
    }
    meta.append(sender, time);
    bubble.appendChild(meta);
    if (typeof message.text === 'string' && message.text) {
      const p = document.createElement('p');
      p.className = 'text';
      p.textContent = message.text;
      bubble.appendChild(p);
    }
    if (typeof message.photoURL === 'string' && message.photoURL) {
      if (message.photoURL === 'NOTSET') {
        const pending = document.createElement('div');
        pending.className = 'photo-pending';
        pending.textContent = 'Photo on its way…';
        bubble.appendChild(pending);
      } else {
        const pending = document.createElement('div');
        pending.className = 'photo-pending';
        pending.textContent = 'Loading photo…';
        bubble.appendChild(pending);
        loadPicture(message.photoURL).then((url) => {
          const img = document.createElement('img');
          img.className = 'photo';
          img.alt = 'Photo from ' + sender.textContent;
          img.decoding = 'async';
          const list = $('messages');
          img.addEventListener('load', () => {
            if (list.scrollHeight - list.scrollTop - list.clientHeight < img.height + 80) list.scrollTop = list.scrollHeight;
          });
          img.src = url;
          pending.replaceWith(img);
        }, () => { pending.textContent = 'The photo could not be loaded.'; });
      }
    }
    li.replaceChildren(avatar, bubble);
    fillAvatar(avatar, message.senderId, fallback);
    if (!mine && knownUser(message.senderId) === undefined) {
      getUser(message.senderId).then((profile) => {
        const name = profileName(profile);
        if (name && li.isConnected) sender.textContent = name;
      });
    }
  }

  async function sendText(text) {
    const conversation = state.current;
    await api('POST', messagesPath(conversation), {
      senderId: state.me.uid, senderName: myName(), date: { '.sv': 'timestamp' }, text,
    });
    state.started.delete(conversation);
  }

  // As the chat apps do it: the message at once with photoURL "NOTSET", then the file, then its URL.
  async function sendPhoto(file) {
    const extension = IMAGE_TYPES[file.type];
    if (!extension) { notify('Only PNG, JPEG, GIF and WebP images can be sent.'); return; }
    if (file.size > MAX_UPLOAD) { notify('That image is larger than 16 MB.'); return; }
    const conversation = state.current;
    const { name: key } = await api('POST', messagesPath(conversation), {
      senderId: state.me.uid, senderName: myName(), date: { '.sv': 'timestamp' }, photoURL: 'NOTSET',
    });
    state.started.delete(conversation);
    const path = 'images/' + state.me.uid + '_' + key + '.' + extension;  // a path only its author can write
    await api('POST', '/v0/b/' + BUCKET + '/o?name=' + encodeURIComponent(path), file);
    await api('PUT', dbPath(['conversations', conversation, 'messages', key, 'photoURL']), 'gs://' + BUCKET + '/' + path);
  }

  async function sendFiles(files) {
    for (const file of Array.from(files)) {
      try { await sendPhoto(file); } catch (e) { if (!(e instanceof AuthError)) notify('The photo was not sent: ' + e.message); }
    }
  }

  // ---- Search -------------------------------------------------------------------------------

  let searchTimer = null;
  function onSearchInput() {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(runSearch, 150);
  }
  async function runSearch() {
    const query = $('search-input').value.trim();
    const seq = ++state.searchSeq;
    const results = $('search-results');
    if (!query) {
      results.hidden = true;
      results.replaceChildren();
      $('search-status').textContent = '';
      return;
    }
    let entries = [];
    try {
      entries = await api('GET', '/.lanchat/users?q=' + encodeURIComponent(query) + '&limit=20');
    } catch (e) {
      if (e instanceof AuthError) return;
      entries = [];
    }
    if (seq !== state.searchSeq) return;
    results.replaceChildren();
    for (const entry of entries) {
      const known = knownUser(entry.uid);
      if (known !== undefined && (profileName(known) !== entry.name || (known && known.picture) !== (entry.picture || undefined))) forgetUser(entry.uid);
      const li = document.createElement('li');
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'search-result';
      button.dataset.uid = entry.uid;
      const isMe = entry.uid === state.me.uid;
      const name = entry.name || shortId(entry.uid);
      const avatar = document.createElement('span');
      avatar.className = 'avatar';
      avatar.setAttribute('aria-hidden', 'true');
      avatar.textContent = initials(name);
      if (entry.picture) {
        loadPicture(entry.picture).then((url) => {
          const img = document.createElement('img'); img.alt = ''; img.src = url; avatar.replaceChildren(img);
        }, () => {});
      }
      const text = document.createElement('span');
      text.className = 'item-text';
      const t = document.createElement('span'); t.className = 'item-title'; t.textContent = name + (isMe ? ' (you)' : '');
      const s = document.createElement('span'); s.className = 'item-sub'; s.textContent = entry.email || shortId(entry.uid);
      text.append(t, s);
      const side = document.createElement('span');
      side.className = 'item-side';
      if (entry.online) {
        const dot = document.createElement('span'); dot.className = 'online-dot'; dot.title = 'online';
        side.appendChild(dot);
      }
      button.append(avatar, text, side);
      button.setAttribute('aria-label', (isMe ? 'Your profile: ' : 'Chat with ') + name + (entry.online ? ', online' : '') + (entry.email ? ', ' + entry.email : ''));
      button.addEventListener('click', () => {
        if (isMe) { location.hash = '#profile'; return; }
        const id = directId(state.me.uid, entry.uid);
        state.started.add(id);
        clearSearch();
        location.hash = '#c/' + encodeURIComponent(id);
      });
      li.appendChild(button);
      results.appendChild(li);
    }
    results.hidden = entries.length === 0;
    $('search-status').textContent = entries.length === 0 ? 'No one found for “' + query + '”.'
      : entries.length === 1 ? '1 person found.' : entries.length + ' people found.';
  }
  function clearSearch() {
    $('search-input').value = '';
    state.searchSeq++;
    $('search-results').hidden = true;
    $('search-results').replaceChildren();
    $('search-status').textContent = '';
  }
  function onSearchKeys(event) {
    const buttons = Array.from($('search-results').querySelectorAll('button'));
    const index = buttons.indexOf(document.activeElement);
    if (event.key === 'ArrowDown') {
      event.preventDefault();
      if (buttons.length) buttons[Math.min(index + 1, buttons.length - 1)].focus();
    } else if (event.key === 'ArrowUp') {
      event.preventDefault();
      if (index <= 0) $('search-input').focus(); else buttons[index - 1].focus();
    } else if (event.key === 'Escape') {
      clearSearch();
      $('search-input').focus();
    }
  }

  // ---- Profile ------------------------------------------------------------------------------

  function renderMe() {
    const profile = state.me.profile;
    $('me-name').textContent = myName();
    fillAvatar($('me-avatar'), state.me.uid, myName());
    fillAvatar($('profile-avatar'), state.me.uid, myName());
    $('profile-id').textContent = state.me.uid;
    for (const [id, field] of [['first-name', 'first_name'], ['last-name', 'last_name']]) {
      const input = $(id);
      if (document.activeElement !== input && !input.dataset.dirty) input.value = (profile && profile[field]) || '';
    }
  }

  async function saveName(event) {
    event.preventDefault();
    const first = $('first-name').value.trim();
    const last = $('last-name').value.trim();
    try {
      await api('PATCH', dbPath(['users', state.me.uid]), { first_name: first, last_name: last });
      delete $('first-name').dataset.dirty;
      delete $('last-name').dataset.dirty;
      $('profile-status').textContent = 'Name saved.';
    } catch (e) {
      if (!(e instanceof AuthError)) $('profile-status').textContent = 'The name was not saved: ' + e.message;
    }
  }

  async function uploadPicture(file) {
    const extension = IMAGE_TYPES[file.type];
    if (!extension) { $('profile-status').textContent = 'Choose a PNG, JPEG, GIF or WebP image.'; return; }
    if (file.size > MAX_UPLOAD) { $('profile-status').textContent = 'That image is larger than 16 MB.'; return; }
    const path = 'images/' + state.me.uid + '_profile_picture.' + extension;
    $('profile-status').textContent = 'Uploading the picture…';
    try {
      await api('POST', '/v0/b/' + BUCKET + '/o?name=' + encodeURIComponent(path), file);
      await api('PUT', dbPath(['users', state.me.uid, 'picture']), path);
      state.pictureVersion++;
      state.pictures.clear();
      $('profile-status').textContent = 'Picture saved.';
    } catch (e) {
      if (!(e instanceof AuthError)) $('profile-status').textContent = 'The picture was not saved: ' + e.message;
    }
  }

  // ---- Screens and routing ------------------------------------------------------------------

  function showPane(name) {
    $('welcome').hidden = name !== 'welcome';
    $('conversation').hidden = name !== 'conversation';
    $('profile').hidden = name !== 'profile';
    $('app').classList.toggle('show-main', name !== 'welcome');
    $('profile-button').setAttribute('aria-expanded', String(name === 'profile'));
  }

  function route() {
    const hash = location.hash;
    if (hash.startsWith('#c/')) {
      let id;
      try { id = decodeURIComponent(hash.slice(3)); } catch (e) { id = ''; }
      if (id) {
        openConversation(id);
        $('composer-text').focus();
        return;
      }
    }
    const previous = state.current;
    closeConversation();
    if (hash === '#profile') {
      showPane('profile');
      document.title = 'Your profile · lanchat';
      $('first-name').focus();
    } else {
      showPane('welcome');
      document.title = 'lanchat';
      const item = previous && $('conversation-list').querySelector('li[data-id="' + CSS.escape(previous) + '"] button');
      if (item) item.focus();
    }
    scheduleConversationList();
  }

  let noticeTimer = null;
  function notify(text) {
    const notice = $('notice');
    notice.textContent = text;
    notice.hidden = false;
    clearTimeout(noticeTimer);
    noticeTimer = setTimeout(() => { notice.hidden = true; }, 6000);
  }

  function showSignIn(reason) {
    if (state.signedOut) return;
    state.signedOut = true;
    $('app').hidden = true;
    $('signin').hidden = false;
    if (reason) $('signin-reason').textContent = reason;
  }

  function wire() {
    $('search-input').addEventListener('input', onSearchInput);
    $('search-form').addEventListener('submit', (e) => { e.preventDefault(); clearTimeout(searchTimer); runSearch(); });
    $('search-form').addEventListener('keydown', onSearchKeys);
    $('search-results').addEventListener('keydown', onSearchKeys);
    $('profile-button').addEventListener('click', () => {
      location.hash = location.hash === '#profile' ? '' : '#profile';
    });
    $('back-button').addEventListener('click', () => { location.hash = ''; });
    $('profile-back').addEventListener('click', () => { location.hash = ''; });
    const text = $('composer-text');
    const resize = () => {
      text.style.height = 'auto';
      text.style.height = Math.min(text.scrollHeight + 2, 160) + 'px';
      text.style.overflowY = text.scrollHeight > 160 ? 'auto' : 'hidden';
    };
    text.addEventListener('input', resize);
    text.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        $('composer').requestSubmit();
      }
    });
    text.addEventListener('paste', (event) => {
      const files = Array.from(event.clipboardData ? event.clipboardData.files : []).filter((f) => IMAGE_TYPES[f.type]);
      if (files.length) { event.preventDefault(); sendFiles(files); }
    });
    $('composer').addEventListener('submit', async (event) => {
      event.preventDefault();
      const value = text.value;
      if (!value.trim() || !state.current) return;
      text.value = '';
      resize();
      try { await sendText(value); } catch (e) {
        if (!(e instanceof AuthError)) { text.value = value; resize(); notify('The message was not sent: ' + e.message); }
      }
    });
    $('photo-input').addEventListener('change', (event) => {
      const files = Array.from(event.target.files || []);
      event.target.value = '';
      sendFiles(files);
    });
    // Drag and drop onto the conversation.
    const pane = $('conversation');
    let depth = 0;
    const hasFiles = (event) => event.dataTransfer && Array.from(event.dataTransfer.types || []).includes('Files');
    pane.addEventListener('dragenter', (event) => { if (hasFiles(event)) { depth++; $('drop-hint').hidden = false; } });
    pane.addEventListener('dragleave', () => { depth = Math.max(0, depth - 1); if (!depth) $('drop-hint').hidden = true; });
    pane.addEventListener('dragover', (event) => { if (hasFiles(event)) { event.preventDefault(); event.dataTransfer.dropEffect = 'copy'; } });
    pane.addEventListener('drop', (event) => {
      event.preventDefault();
      depth = 0;
      $('drop-hint').hidden = true;
      if (event.dataTransfer && event.dataTransfer.files.length) sendFiles(event.dataTransfer.files);
    });
    // A file dropped anywhere else must not replace the page.
    window.addEventListener('dragover', (event) => event.preventDefault());
    window.addEventListener('drop', (event) => event.preventDefault());
    $('name-form').addEventListener('submit', saveName);
    for (const id of ['first-name', 'last-name']) $(id).addEventListener('input', () => { $(id).dataset.dirty = '1'; });
    $('picture-input').addEventListener('change', (event) => {
      const file = event.target.files && event.target.files[0];
      event.target.value = '';
      if (file) uploadPicture(file);
    });
    window.addEventListener('hashchange', route);
    document.addEventListener('visibilitychange', () => { if (document.visibilityState === 'visible') scheduleConversationList(); });
  }

  async function start() {
    const failedLogin = location.hash === '#login-failed';
    if (failedLogin) history.replaceState(null, '', location.pathname);
    let status;
    try {
      status = await api('GET', '/.lanchat/status');
    } catch (e) {
      if (e instanceof AuthError) {
        state.signedOut = false;
        $('app').hidden = true;
        $('signin').hidden = false;
        $('signin-reason').textContent = failedLogin
          ? 'That login link was already used or has expired.'
          : 'This browser is not signed in to the node.';
      } else {
        $('signin').hidden = false;
        $('signin-reason').textContent = 'The node did not answer: ' + e.message;
      }
      return;
    }
    state.me.uid = status.userId;
    $('signin').hidden = true;
    $('app').hidden = false;
    wire();
    stream(dbPath(['users', state.me.uid]), (kind, event) => {
      state.me.profile = applyEvent(state.me.profile, kind, event);
      const entry = { at: Date.now(), value: state.me.profile, promise: Promise.resolve(state.me.profile) };
      state.users.set(state.me.uid, entry);
      renderMe();
    });
    stream(dbPath(['conversations']), (kind, event) => {
      state.convRoot = applyEvent(state.convRoot, kind, event) || {};
      scheduleConversationList();
    });
    renderMe();
    route();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start); else start();
})();
"""#
}
