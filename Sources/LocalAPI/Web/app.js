// lanchat web chat: one page over the node's local API (Firebase REST and streaming, storage,
// users directory). Data requests carry the session cookie set at login; no token is in the page.
(function () {
  'use strict';

  const BUCKET = 'lanchat';
  const MAX_UPLOAD = 16 * 1024 * 1024;
  const IMAGE_TYPES = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/gif': 'gif', 'image/webp': 'webp' };
  const $ = (id) => document.getElementById(id);

  // A conversation opens with its last PAGE messages (a stream of that window); scrolling up
  // fetches OLDER_PAGE more at a time, so opening a long conversation reads only its end.
  const PAGE = 50;
  const OLDER_PAGE = 200;

  const state = {
    me: { uid: null, profile: null },
    summaries: {},           // conversation id -> summary from /.lanchat/conversations, as streamed
    current: null,           // the open conversation id
    currentMessages: {},     // its messages shown: the streamed window and the older pages loaded
    window: {},              // the streamed window of its last messages
    keys: [],                // currentMessages' keys, sorted
    reachedStart: false,     // whether its first message is loaded
    loadingOlder: false,
    readSent: new Map(),     // conversation id -> the read mark last sent to the node
    messageStream: null,
    messageNodes: new Map(), // message key -> {li, json}
    started: new Set(),      // conversations opened here that have no message yet
    users: new Map(),        // uid -> {at, promise}
    pictures: new Map(),     // storage path -> Promise of a loadable URL
    pictureVersion: 0,
    searchSeq: 0,
    signedOut: false,
    typing: {},              // the open conversation's typingIndicator: uid -> value
    receipts: {},            // its readReceipts: uid -> the last message key that user read
    presence: null,          // the other member's presence, in a direct conversation
    liveStreams: [],         // the streams of the above, closed with the conversation
    typingSent: 0,           // when this page last said the user is typing (0: not typing)
    typingTimer: null,
    notified: new Map(),     // conversation id -> the last message key a notification was shown for
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
      $('conversation-title').textContent = conversationTitle(state.current);
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
    const summary = state.summaries[id];
    if (summary && typeof summary.with === 'string') return summary.with;  // a private direct conversation
    if (id.length === 87 && id[43] === '_') {
      const a = id.slice(0, 43); const b = id.slice(44);
      if (a === state.me.uid) return b;
      if (b === state.me.uid) return a;
    }
    return null;
  }
  // A conversation's title: its meta title, the other member's name for a direct one (from the
  // profile, else from a message they sent), else its id.
  function conversationTitle(id) {
    const summary = state.summaries[id];
    if (summary && typeof summary.title === 'string' && summary.title.trim()) return summary.title;
    const other = otherMember(id);
    if (!other) return id;
    const profile = knownUser(other);
    if (profileName(profile)) return profileName(profile);
    const hints = [summary && summary.last].concat(state.current === id ? state.keys.slice(-PAGE).map((k) => state.currentMessages[k]) : []);
    for (const m of hints) {
      if (m && m.senderId === other && typeof m.senderName === 'string' && m.senderName) return m.senderName;
    }
    return shortId(other);
  }

  // The node keeps where this user has read each conversation up to (it counts the unread
  // messages from it); the page moves it forward as the newest messages are shown.
  function markRead(id, key) {
    if (!key) return;
    const summary = state.summaries[id];
    const known = [state.readSent.get(id) || '', (summary && summary.readKey) || ''].sort().pop();
    if (key <= known) return;
    state.readSent.set(id, key);
    // A failure is not retried for this key (no request storm); the next message sends a later one.
    api('PUT', '/.lanchat/conversations/' + encodeURIComponent(id) + '/read', key).catch(() => {});
  }

  function messageSummary(message) {
    if (!message || typeof message !== 'object') return '';
    const who = message.senderId === state.me.uid ? 'You: ' : '';
    if (typeof message.text === 'string' && message.text) return who + message.text.replace(/\s+/g, ' ');
    if (message.photoURL || message.photo) return who + 'Photo';
    return '';
  }

  // Made once: toLocale*String builds a formatter per call, which dominated showing a page of
  // older messages.
  const formats = {
    time: new Intl.DateTimeFormat([], { hour: '2-digit', minute: '2-digit' }),
    day: new Intl.DateTimeFormat([], { day: 'numeric', month: 'short' }),
    dayAndYear: new Intl.DateTimeFormat([], { day: 'numeric', month: 'short', year: 'numeric' }),
  };
  function formatTime(millis, long) {
    if (typeof millis !== 'number' || !Number.isFinite(millis) || Math.abs(millis) > 8.64e15) return '';
    const date = new Date(millis);
    const now = new Date();
    const sameDay = date.toDateString() === now.toDateString();
    const time = formats.time.format(date);
    if (sameDay && !long) return time;
    return (date.getFullYear() === now.getFullYear() ? formats.day : formats.dayAndYear).format(date) + ' ' + time;
  }

  let listScheduled = false;
  function scheduleConversationList() {
    if (listScheduled) return;
    listScheduled = true;
    requestAnimationFrame(() => { listScheduled = false; renderConversationList(); });
  }

  function renderConversationList() {
    updateMembersButton();
    // A conversation opened before its summary came (a group just made) takes its title now.
    if (state.current && $('conversation-title').textContent !== conversationTitle(state.current)) {
      $('conversation-title').textContent = conversationTitle(state.current);
    }
    const list = $('conversation-list');
    const rows = [];
    const ids = new Set(Object.keys(state.summaries).concat(Array.from(state.started)));
    for (const id of ids) {
      const summary = state.summaries[id] || {};
      const lastKey = typeof summary.lastKey === 'string' ? summary.lastKey : '';
      const reading = id === state.current && document.visibilityState === 'visible';
      if (reading) markRead(id, lastKey);
      // The open conversation shows everything up to the last message: nothing in it is unread.
      const unread = reading || typeof summary.unread !== 'number' ? 0 : summary.unread;
      rows.push({ id, lastKey, last: summary.last || null, unread });
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
      const title = conversationTitle(row.id);
      const summary = messageSummary(row.last);
      const when = row.last ? formatTime(row.last.date) : '';
      // Private conversations (readable by their members only) carry a lock; public ones a '#'.
      const isPrivate = !!(state.summaries[row.id] && state.summaries[row.id].private);
      const signature = [title, summary, when, row.unread, row.id === state.current, isPrivate].join('\u0001');
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
        const mark = document.createElement('span');
        mark.className = 'item-mark';
        mark.textContent = isPrivate ? '\u{1F512}' : '#';
        mark.title = isPrivate ? 'Private: only its members can read it' : 'Public: everyone on the network can read it';
        mark.setAttribute('aria-label', isPrivate ? 'private' : 'public');
        side.appendChild(mark);
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
      state.window = {};
      state.keys = [];
      state.reachedStart = false;
      state.loadingOlder = false;
      state.openedAt = performance.now();
      const list = $('messages');
      list.replaceChildren();
      delete list.dataset.history;
      state.messageNodes.clear();
      const stamp = id;
      const query = '?orderBy=' + encodeURIComponent('"$key"') + '&limitToLast=' + PAGE;
      state.messageStream = stream(messagesPath(id) + query, (kind, event) => {
        if (state.current !== stamp) return;
        windowChanged(kind, event);
      });
      openLiveStreams(id);
    }
    const showTitle = () => {
      if (state.current !== id) return;
      const title = conversationTitle(id);
      $('conversation-title').textContent = title;
      setTitle(title + ' · lanchat');
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
    stopTyping();
    for (const s of state.liveStreams) s.close();
    state.liveStreams = [];
    state.typing = {};
    state.receipts = {};
    state.presence = null;
    state.current = null;
    closeMembers();
    $('typing-line').textContent = '';
    $('conversation-presence').hidden = true;
  }

  // ---- Live state: typing, read receipts, presence, notifications ---------------------------

  // Typing: said at once on the first keystroke (peers show it within a few milliseconds),
  // said again every 3 s while keys keep coming, and cleared after 4 s without one, on sending
  // and on leaving. The node clears it everywhere by itself if this page or its node goes away.
  const TYPING_REFRESH = 3000;
  const TYPING_IDLE = 4000;
  function typingPath(id) { return dbPath(['conversations', id, 'typingIndicator', state.me.uid]); }
  function keystroke() {
    if (!state.current) return;
    const now = Date.now();
    if (now - state.typingSent > TYPING_REFRESH) {
      state.typingSent = now;
      api('PUT', typingPath(state.current), true).catch(() => {});
    }
    clearTimeout(state.typingTimer);
    state.typingTimer = setTimeout(stopTyping, TYPING_IDLE);
  }
  function stopTyping() {
    clearTimeout(state.typingTimer);
    if (!state.typingSent || !state.current) { state.typingSent = 0; return; }
    state.typingSent = 0;
    api('DELETE', typingPath(state.current)).catch(() => {});
  }

  // One stream for the conversation's typing flags and receipts (`only=`: without its messages,
  // which have their own): a browser holds at most 6 connections to the node, and every stream
  // keeps one. Presence is asked for every 20 s instead.
  function openLiveStreams(id) {
    let live = {};
    state.liveStreams.push(stream(dbPath(['conversations', id]) + '?only=typingIndicator,readReceipts', (kind, event) => {
      if (state.current !== id) return;
      live = applyEvent(live, kind, event) || {};
      state.typing = live.typingIndicator || {};
      state.receipts = live.readReceipts || {};
      renderTyping();
      renderReceipts();
    }));
    const other = otherMember(id);
    if (other) {
      const ask = () => api('GET', dbPath(['presence', other])).then((p) => {
        if (state.current !== id) return;
        state.presence = p;
        renderPresence();
      }, () => {});
      ask();
      const timer = setInterval(ask, 20000);
      state.liveStreams.push({ close() { clearInterval(timer); } });
    }
  }

  function renderTyping() {
    const names = Object.keys(state.typing || {}).filter((uid) => uid !== state.me.uid && state.typing[uid])
      .map((uid) => profileName(knownUser(uid)) || shortId(uid)).sort();
    let text = '';
    if (names.length === 1) text = names[0] + ' is typing...';
    else if (names.length === 2) text = names[0] + ' and ' + names[1] + ' are typing...';
    else if (names.length > 2) text = names.length + ' people are typing...';
    $('typing-line').textContent = text;
  }

  function agoText(millis) {
    const minutes = Math.max(0, Math.round((Date.now() - millis) / 60000));
    if (minutes < 1) return 'last seen just now';
    if (minutes < 60) return 'last seen ' + minutes + ' min ago';
    return 'last seen ' + formatTime(millis, true);
  }
  function renderPresence() {
    const p = state.presence;
    const line = $('conversation-presence');
    if (!p || typeof p !== 'object' || typeof p.state !== 'string') { line.hidden = true; return; }
    line.hidden = false;
    line.className = 'presence ' + p.state;
    $('presence-text').textContent = p.state === 'online' ? 'online' : p.state === 'away' ? 'away'
      : (typeof p.lastSeen === 'number' ? agoText(p.lastSeen) : 'offline');
  }

  // Read ticks on this user's messages: one tick sent, two (blue) once the other member has read
  // up to it, in a direct conversation; in a group, "Seen by N" under this user's last message.
  function renderReceipts() {
    const others = Object.keys(state.receipts || {}).filter((uid) => uid !== state.me.uid && typeof state.receipts[uid] === 'string');
    const direct = otherMember(state.current);
    let lastMine = null;
    for (const key of state.keys) {
      const message = state.currentMessages[key];
      if (message && message.senderId === state.me.uid) lastMine = key;
    }
    for (const [key, entry] of state.messageNodes) {
      const li = entry.li;
      const meta = li.querySelector('.meta');
      if (!meta || !li.classList.contains('mine')) continue;
      let ticks = meta.querySelector('.ticks');
      if (!ticks) { ticks = document.createElement('span'); meta.appendChild(ticks); }
      const seenBy = others.filter((uid) => state.receipts[uid] >= key);
      const seen = direct ? seenBy.includes(direct) : seenBy.length > 0;
      ticks.className = 'ticks' + (seen ? ' seen' : '');
      ticks.textContent = seen ? '\u2713\u2713' : '\u2713';
      ticks.title = seen ? 'Seen' : 'Sent';
      ticks.setAttribute('aria-label', seen ? 'Seen' : 'Sent');
      let line = li.querySelector('.seen-by');
      if (!direct && key === lastMine && seenBy.length) {
        if (!line) { line = document.createElement('span'); line.className = 'seen-by'; li.querySelector('.bubble').appendChild(line); }
        line.textContent = 'Seen by ' + seenBy.length;
      } else if (line) {
        line.remove();
      }
    }
  }

  // The tab's title carries the number of unread messages.
  let baseTitle = 'lanchat';
  function setTitle(title) { baseTitle = title; updateTitle(); }
  function updateTitle() {
    let unread = 0;
    for (const id of Object.keys(state.summaries)) {
      const s = state.summaries[id];
      if (id === state.current && document.visibilityState === 'visible') continue;
      if (s && typeof s.unread === 'number') unread += s.unread;
    }
    document.title = (unread ? '(' + (unread > 99 ? '99+' : unread) + ') ' : '') + baseTitle;
  }

  // Desktop notifications, only once the user asked for them with the button, for a new message
  // from someone else in a conversation not on screen.
  function setUpNotifications() {
    const button = $('notify-button');
    if (!('Notification' in window) || Notification.permission !== 'default') return;
    button.hidden = false;
    button.addEventListener('click', async () => {
      try { await Notification.requestPermission(); } catch (e) { /* an old browser's callback form */ }
      button.hidden = Notification.permission === 'default' ? false : true;
    });
  }
  function maybeNotify(previous) {
    for (const id of Object.keys(state.summaries)) {
      const s = state.summaries[id];
      if (!s || typeof s.lastKey !== 'string' || !s.last) continue;
      const before = previous[id] && previous[id].lastKey;
      const first = !state.notified.has(id);
      state.notified.set(id, s.lastKey);
      if (first || before === s.lastKey || s.last.senderId === state.me.uid || !(s.unread > 0)) continue;
      const onScreen = id === state.current && document.visibilityState === 'visible';
      if (onScreen || !('Notification' in window) || Notification.permission !== 'granted') continue;
      try {
        const n = new Notification(conversationTitle(id), { body: messageSummary(s.last), tag: 'lanchat-' + id });
        n.onclick = () => { window.focus(); location.hash = '#c/' + encodeURIComponent(id); };
      } catch (e) { /* notifications refused by the platform */ }
    }
  }

  // An event of the stream of the last PAGE messages. A message that leaves the window was
  // deleted if the window still reaches below it, or holds fewer than PAGE messages (then there
  // is nothing older); otherwise a newer message pushed it out, and it stays shown.
  function windowChanged(kind, event) {
    const before = state.window;
    const after = applyEvent(JSON.parse(JSON.stringify(before)), kind, event) || {};
    state.window = after;
    const keys = Object.keys(after).sort();
    const lowest = keys.length ? keys[0] : null;
    const changed = [];
    const removed = [];
    if (keys.length === PAGE && state.keys.length && lowest > state.keys[state.keys.length - 1]) {
      // The stream came back after more than a window of new messages: what was shown is no
      // longer next to them, so the list starts again from the window.
      for (const key of state.keys.slice()) removed.push(key);
      state.reachedStart = false;
      delete $('messages').dataset.history;
    }
    for (const key of keys) {
      if (JSON.stringify(after[key]) !== JSON.stringify(state.currentMessages[key])) changed.push(key);
    }
    for (const key of Object.keys(before)) {
      if (key in after) continue;
      if (keys.length < PAGE || (lowest !== null && key > lowest)) removed.push(key);
    }
    if (keys.length < PAGE) state.reachedStart = true;
    for (const key of changed) state.currentMessages[key] = after[key];
    for (const key of removed) delete state.currentMessages[key];
    renderMessages(changed, removed, false);
    if (keys.length && state.openedAt !== undefined) {
      window.__lanchatFirstMessagesMs = performance.now() - state.openedAt;
      state.openedAt = undefined;
    }
    requestAnimationFrame(maybeLoadOlder);
  }

  // Loads the page before the oldest message shown when the list is scrolled near its top (or
  // does not fill the view). `endAt` is inclusive, so one more is asked for and the oldest
  // shown, which comes back too, is dropped.
  async function maybeLoadOlder() {
    const list = $('messages');
    const id = state.current;
    if (state.reachedStart && state.keys.length) list.dataset.history = 'complete';
    if (!id || state.reachedStart || state.loadingOlder || !state.keys.length || list.scrollTop > 400) return;
    state.loadingOlder = true;
    list.dataset.history = 'loading';
    const oldest = state.keys[0];
    const query = '?orderBy=' + encodeURIComponent('"$key"') + '&endAt=' + encodeURIComponent(JSON.stringify(oldest))
      + '&limitToLast=' + (OLDER_PAGE + 1);
    let page;
    try {
      page = await api('GET', messagesPath(id) + query);
    } catch (e) {
      if (state.current === id) { state.loadingOlder = false; list.dataset.history = ''; }
      if (!(e instanceof AuthError)) setTimeout(maybeLoadOlder, 2000);
      return;
    }
    if (state.current !== id) return;
    state.loadingOlder = false;
    const members = page && typeof page === 'object' ? page : {};
    const added = Object.keys(members).filter((key) => key < oldest && !(key in state.currentMessages));
    if (Object.keys(members).filter((key) => key < oldest).length < OLDER_PAGE) state.reachedStart = true;
    for (const key of added) state.currentMessages[key] = members[key];
    renderMessages(added, [], true);
    list.dataset.history = state.reachedStart ? 'complete' : '';
    requestAnimationFrame(maybeLoadOlder);
  }

  // The index of the first key in the sorted `keys` not below `key`.
  function lowerBound(keys, key) {
    let low = 0, high = keys.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (keys[mid] < key) low = mid + 1; else high = mid;
    }
    return low;
  }

  // Brings the list in step with currentMessages for the keys that changed or went; older
  // messages added at the top keep what the reader sees in place.
  function renderMessages(changed, removed, older) {
    const list = $('messages');
    const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 60;
    const fromBottom = list.scrollHeight - list.scrollTop;
    let mineAdded = false;
    let newest = false;
    for (const key of removed) {
      const entry = state.messageNodes.get(key);
      if (entry) { entry.li.remove(); state.messageNodes.delete(key); }
      const index = lowerBound(state.keys, key);
      if (state.keys[index] === key) state.keys.splice(index, 1);
    }
    const sorted = changed.slice().sort();
    if (older && sorted.length) {
      // A page of older messages: all below the oldest shown, inserted at once.
      const fragment = document.createDocumentFragment();
      for (const key of sorted) {
        const entry = { li: document.createElement('li'), json: JSON.stringify(state.currentMessages[key]) };
        entry.li.dataset.key = key;
        fillMessage(entry.li, state.currentMessages[key]);
        state.messageNodes.set(key, entry);
        fragment.appendChild(entry.li);
      }
      state.keys = sorted.concat(state.keys);
      // History, not news: kept out of what the live region announces.
      list.setAttribute('aria-busy', 'true');
      list.insertBefore(fragment, list.firstChild);
      requestAnimationFrame(() => list.removeAttribute('aria-busy'));
    } else {
      for (const key of sorted) {
        const message = state.currentMessages[key];
        const json = JSON.stringify(message);
        let entry = state.messageNodes.get(key);
        if (!entry) {
          entry = { li: document.createElement('li'), json: '' };
          entry.li.dataset.key = key;
          state.messageNodes.set(key, entry);
          const index = lowerBound(state.keys, key);
          state.keys.splice(index, 0, key);
          const next = index + 1 < state.keys.length ? state.messageNodes.get(state.keys[index + 1]) : null;
          list.insertBefore(entry.li, next ? next.li : null);
          if (message && message.senderId === state.me.uid) mineAdded = true;
          if (index === state.keys.length - 1) newest = true;
        }
        if (entry.json !== json) {
          entry.json = json;
          fillMessage(entry.li, message);
        }
      }
    }
    if (older) list.scrollTop = list.scrollHeight - fromBottom;
    else if (atBottom || mineAdded || (newest && state.keys.length <= sorted.length)) list.scrollTop = list.scrollHeight;
    if (document.visibilityState === 'visible' && state.keys.length) markRead(state.current, state.keys[state.keys.length - 1]);
    renderReceipts();
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
    if (typeof message.date === 'number' && Math.abs(message.date) <= 8.64e15) {  // a Date can hold it
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
      if (!isMe) {
        const message = document.createElement('button');
        message.type = 'button';
        message.className = 'dm-button';
        message.dataset.uid = entry.uid;
        message.textContent = 'Message';
        message.title = 'A private conversation: only the two of you can read it';
        message.setAttribute('aria-label', 'Message ' + name + ' privately');
        message.addEventListener('click', () => openDirect(entry.uid));
        li.classList.add('with-action');
        li.appendChild(message);
      }
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
    const buttons = Array.from($('search-results').querySelectorAll('button.search-result'));
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

  // ---- Private conversations ----------------------------------------------------------------
  // The node makes and changes them (POST /.lanchat/groups, /.lanchat/dm/UID): each change is a
  // signed key record that seals the conversation's key to its members only.

  async function openDirect(uid) {
    try {
      const { id } = await api('POST', '/.lanchat/dm/' + encodeURIComponent(uid));
      state.started.add(id);
      clearSearch();
      location.hash = '#c/' + encodeURIComponent(id);
    } catch (e) {
      if (!(e instanceof AuthError)) notify('The private conversation was not opened: ' + e.message);
    }
  }

  // A search box that lists users from the directory under it; `pick(entry)` on a click.
  function userPicker(input, results, pick, exclude) {
    let seq = 0;
    let timer = null;
    async function run() {
      const query = input.value.trim();
      const mine = ++seq;
      if (!query) { results.replaceChildren(); return; }
      let entries = [];
      try { entries = await api('GET', '/.lanchat/users?q=' + encodeURIComponent(query) + '&limit=10'); } catch (e) { entries = []; }
      if (mine !== seq) return;
      results.replaceChildren();
      for (const entry of entries) {
        if (entry.uid === state.me.uid || exclude(entry.uid)) continue;
        const li = document.createElement('li');
        const button = document.createElement('button');
        button.type = 'button';
        button.className = 'pick-result';
        button.dataset.uid = entry.uid;
        button.textContent = (entry.name || shortId(entry.uid)) + (entry.email ? ' · ' + entry.email : '');
        button.setAttribute('aria-label', 'Add ' + (entry.name || shortId(entry.uid)));
        button.addEventListener('click', () => { pick(entry); input.value = ''; results.replaceChildren(); input.focus(); });
        li.appendChild(button);
        results.appendChild(li);
      }
    }
    input.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(run, 150); });
  }

  const chosen = new Map();  // the new group's members: uid -> name
  function renderChosen() {
    const list = $('group-chosen');
    list.replaceChildren();
    for (const [uid, name] of chosen) {
      const li = document.createElement('li');
      li.className = 'member';
      li.dataset.uid = uid;
      const t = document.createElement('span'); t.className = 'item-title'; t.textContent = name;
      const remove = document.createElement('button');
      remove.type = 'button'; remove.className = 'member-remove'; remove.textContent = 'Remove';
      remove.setAttribute('aria-label', 'Remove ' + name);
      remove.addEventListener('click', () => { chosen.delete(uid); renderChosen(); });
      li.append(t, remove);
      list.appendChild(li);
    }
    if (chosen.size === 0) {
      const li = document.createElement('li'); li.className = 'empty'; li.textContent = 'Only you so far.';
      list.appendChild(li);
    }
  }
  function showGroupForm() {
    chosen.clear();
    renderChosen();
    $('group-title').value = '';
    $('group-search').value = '';
    $('group-search-results').replaceChildren();
    $('group-status').textContent = '';
    showPane('group');
    setTitle('New group · lanchat');
    $('group-title').focus();
  }
  async function createGroup(event) {
    event.preventDefault();
    const title = $('group-title').value.trim();
    if (!title) { $('group-status').textContent = 'Give the group a title.'; return; }
    $('group-status').textContent = 'Creating the group…';
    try {
      const { id } = await api('POST', '/.lanchat/groups', { title, members: Array.from(chosen.keys()) });
      state.started.add(id);
      location.hash = '#c/' + encodeURIComponent(id);
    } catch (e) {
      if (!(e instanceof AuthError)) $('group-status').textContent = 'The group was not created: ' + e.message;
    }
  }

  // The members panel of an open private conversation.
  const panel = { id: null, info: null, seq: 0 };
  function isPrivate(id) { return !!(state.summaries[id] && state.summaries[id].private); }
  function updateMembersButton() {
    const show = !!state.current && isPrivate(state.current);
    $('members-button').hidden = !show;
    if (!show) closeMembers();
  }
  function closeMembers() {
    panel.id = null;
    panel.info = null;
    $('members-panel').hidden = true;
    $('members-button').setAttribute('aria-expanded', 'false');
  }
  async function loadMembers() {
    const id = state.current;
    const mine = ++panel.seq;
    let info;
    try {
      info = await api('GET', '/.lanchat/groups/' + encodeURIComponent(id));
    } catch (e) {
      if (e instanceof AuthError || mine !== panel.seq) return;
      $('members-status').textContent = 'You are not a member of this conversation any more.';
      $('member-list').replaceChildren();
      $('member-add').hidden = true;
      $('leave-button').hidden = true;
      return;
    }
    if (mine !== panel.seq || state.current !== id) return;
    panel.id = id;
    panel.info = info;
    const creator = info.creator === state.me.uid;
    const list = $('member-list');
    list.replaceChildren();
    for (const member of info.members) {
      const li = document.createElement('li');
      li.className = 'member';
      li.dataset.uid = member.uid;
      const name = member.uid === state.me.uid ? myName() + ' (you)' : (member.name || shortId(member.uid));
      const t = document.createElement('span'); t.className = 'item-title';
      t.textContent = name + (member.uid === info.creator ? ' · creator' : '');
      li.appendChild(t);
      if (creator && member.uid !== state.me.uid) {
        const remove = document.createElement('button');
        remove.type = 'button'; remove.className = 'member-remove'; remove.textContent = 'Remove';
        remove.dataset.uid = member.uid;
        remove.setAttribute('aria-label', 'Remove ' + name + ' from the group');
        remove.addEventListener('click', () => changeMembers({ remove: [member.uid] }, name + ' was removed.'));
        li.appendChild(remove);
      }
      list.appendChild(li);
    }
    $('member-add').hidden = !creator || info.direct;
    $('leave-button').hidden = creator || info.direct;
  }
  async function changeMembers(body, done) {
    const id = state.current;
    $('members-status').textContent = 'Saving…';
    try {
      await api('POST', '/.lanchat/groups/' + encodeURIComponent(id) + '/members', body);
      $('members-status').textContent = done;
    } catch (e) {
      if (!(e instanceof AuthError)) $('members-status').textContent = 'Not changed: ' + e.message;
    }
    if (state.current === id) loadMembers();
  }
  async function leaveGroup() {
    const id = state.current;
    if (!window.confirm('Leave this group? You will not read its new messages.')) return;
    try {
      await api('POST', '/.lanchat/groups/' + encodeURIComponent(id) + '/leave');
      location.hash = '';
    } catch (e) {
      if (!(e instanceof AuthError)) $('members-status').textContent = 'You did not leave: ' + e.message;
    }
  }
  function toggleMembers() {
    if (!$('members-panel').hidden) { closeMembers(); return; }
    $('members-panel').hidden = false;
    $('members-button').setAttribute('aria-expanded', 'true');
    $('members-status').textContent = '';
    loadMembers();
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
    $('group-pane').hidden = name !== 'group';
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
    if (hash === '#new-group') {
      showGroupForm();
    } else if (hash === '#profile') {
      showPane('profile');
      setTitle('Your profile · lanchat');
      $('first-name').focus();
    } else {
      showPane('welcome');
      setTitle('lanchat');
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
    $('group-back').addEventListener('click', () => { location.hash = ''; });
    $('new-group-button').addEventListener('click', () => { location.hash = '#new-group'; });
    $('group-form').addEventListener('submit', createGroup);
    userPicker($('group-search'), $('group-search-results'), (entry) => { chosen.set(entry.uid, entry.name || shortId(entry.uid)); renderChosen(); },
               (uid) => chosen.has(uid));
    userPicker($('member-search'), $('member-search-results'), (entry) => changeMembers({ add: [entry.uid] }, (entry.name || shortId(entry.uid)) + ' was added.'),
               (uid) => !!(panel.info && panel.info.members.some((m) => m.uid === uid)));
    $('members-button').addEventListener('click', toggleMembers);
    $('leave-button').addEventListener('click', leaveGroup);
    const text = $('composer-text');
    const resize = () => {
      text.style.height = 'auto';
      text.style.height = Math.min(text.scrollHeight + 2, 160) + 'px';
      text.style.overflowY = text.scrollHeight > 160 ? 'auto' : 'hidden';
    };
    text.addEventListener('input', resize);
    text.addEventListener('input', keystroke);
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
      stopTyping();
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
    $('messages').addEventListener('scroll', () => { if ($('messages').scrollTop < 400) maybeLoadOlder(); }, { passive: true });
    document.addEventListener('visibilitychange', () => { if (document.visibilityState === 'visible') scheduleConversationList(); updateTitle(); });
    window.addEventListener('pagehide', stopTyping);
    setUpNotifications();
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
    stream('/.lanchat/conversations', (kind, event) => {
      const previous = state.summaries;
      state.summaries = applyEvent(JSON.parse(JSON.stringify(previous)), kind, event) || {};
      maybeNotify(previous);
      updateTitle();
      scheduleConversationList();
    });
    renderMe();
    route();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start); else start();
})();
