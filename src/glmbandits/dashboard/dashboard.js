// The glmbandits dashboard: polls the service's read endpoints with the API key the user
// typed and draws what they return. No build step, no storage: the key lives only in the
// `key` variable of this closure and is gone when the page is closed or reloaded.
(function () {
  "use strict";

  var params = new URLSearchParams(window.location.search);
  var POLL_MS = Math.max(200, Number(params.get("poll")) || 2000);
  var BUCKET_S = 10;          // chart resolution, seconds
  var HISTORY_S = 600;        // charts show the last ten minutes
  var WINDOW_S = 60;          // the headline rates cover the last minute
  var LATEST = 10;            // rows of the latest-decisions table
  var EVENTS_PAGE = 1000;     // the service's cap on one /v1/events answer: a full page
                              // means more are waiting, so the next poll comes at once

  var key = null;             // the API key: memory only
  var generation = 0;         // bumped on every (re)connect and on a wrong key
  var timer = null;
  var state = null;
  var charts = {rate: null, reward: null, drift: null};
  var pristine = document.getElementById("dashboard").innerHTML;

  function $(id) { return document.getElementById(id); }
  function setText(id, text) { $(id).textContent = text; }
  function nowS() { return Date.now() / 1000; }
  function clock(seconds) { return new Date(seconds * 1000).toLocaleTimeString("en-GB"); }
  function integer(n) { return n == null ? "–" : Number(n).toLocaleString("en-US"); }
  function fixed(x, digits) {
    return (x == null || !isFinite(x)) ? "–" : Number(x).toFixed(digits == null ? 3 : digits);
  }
  function percent(x) { return x == null ? "–" : (100 * x).toFixed(1) + "%"; }
  function interval(lo, hi) { return (lo == null || hi == null) ? "–" : "[" + fixed(lo) + ", " + fixed(hi) + "]"; }

  function freshState() {
    return {lastSeq: 0, decisions: [], rewards: [], latest: [], version: null,
            versionSince: nowS(), versionChanged: false, previousVersion: null};
  }

  function AuthError() { this.name = "AuthError"; }

  function request(path) {
    return fetch(path, {headers: {"Authorization": "Bearer " + key}, cache: "no-store"})
      .then(function (response) {
        if (response.status === 401) { throw new AuthError(); }
        return response;
      });
  }

  function getJSON(path, optional) {
    return request(path).then(function (response) {
      if (optional && response.status === 404) { return null; }
      if (!response.ok) { throw new Error(path + ": HTTP " + response.status); }
      return response.json();
    });
  }

  function getEvents(after) {
    return request("/v1/events?after=" + after + "&limit=" + EVENTS_PAGE).then(function (response) {
      if (!response.ok) { throw new Error("/v1/events: HTTP " + response.status); }
      return response.text();
    }).then(function (text) {
      return text.split("\n").filter(function (line) { return line.trim() !== ""; })
        .map(function (line) { return JSON.parse(line); });
    });
  }

  // -- state from the event stream -------------------------------------------------
  function absorb(events) {
    var cutoff = nowS() - HISTORY_S - BUCKET_S;
    events.forEach(function (event) {
      if (typeof event.seq === "number" && event.seq > state.lastSeq) { state.lastSeq = event.seq; }
      if (event.kind === "decision") {
        state.decisions.push(event.timestamp);
        state.latest.unshift(event);
      } else if (event.kind === "reward" && event.status === "learned") {
        state.rewards.push([event.timestamp, event.reward]);
      }
    });
    state.latest = state.latest.slice(0, LATEST);
    state.decisions = state.decisions.filter(function (t) { return t >= cutoff; });
    state.rewards = state.rewards.filter(function (r) { return r[0] >= cutoff; });
  }

  function series() {
    // the last complete bucket: the one still filling would show a false dip
    var end = Math.floor(nowS() / BUCKET_S) * BUCKET_S - BUCKET_S;
    var xs = [], rate = [], reward = [];
    var n = HISTORY_S / BUCKET_S;
    var counts = new Array(n).fill(0), sums = new Array(n).fill(0), seen = new Array(n).fill(0);
    function slot(t) { return n - 1 - Math.floor((end - Math.floor(t / BUCKET_S) * BUCKET_S) / BUCKET_S); }
    state.decisions.forEach(function (t) { var i = slot(t); if (i >= 0 && i < n) { counts[i] += 1; } });
    state.rewards.forEach(function (r) {
      var i = slot(r[0]); if (i >= 0 && i < n) { sums[i] += r[1]; seen[i] += 1; }
    });
    for (var i = 0; i < n; i++) {
      xs.push(end - (n - 1 - i) * BUCKET_S);
      rate.push(counts[i] / BUCKET_S);
      reward.push(seen[i] ? sums[i] / seen[i] : null);
    }
    return {xs: xs, rate: rate, reward: reward};
  }

  // -- drawing -----------------------------------------------------------------------
  // y from 0 (and at least up to `top`), so a small change does not look like a cliff
  function fromZero(top) {
    return function (u, min, max) { return [Math.min(0, min || 0), Math.max(top, (max || 0) * 1.1)]; };
  }

  function chart(name, element, label, color, data, top) {
    var width = Math.max(300, $(element).clientWidth);
    if (charts[name] === null) {
      charts[name] = new uPlot({
        width: width, height: 220, legend: {show: false}, padding: [12, 28, 0, 0],
        scales: {x: {time: true}, y: {range: fromZero(top)}},
        series: [{}, {label: label, stroke: color, width: 2, fill: color + "22", spanGaps: true}],
        axes: [{}, {size: 50}]
      }, data, $(element));
    } else {
      charts[name].setSize({width: width, height: 220});
      charts[name].setData(data);
    }
  }

  function renderModel(model) {
    var counts = model.counts || {};
    setText("model-class", model["class"] || "–");
    setText("model-shape", "d = " + integer(model.n_features) + " · K ≤ " + integer(model.max_actions)
      + (model.mode === "shadow" ? " · shadow mode" : ""));
    setText("model-version", integer(model.model_version));
    if (state.version !== null && model.model_version !== state.version) {
      state.previousVersion = state.version;
      state.versionSince = nowS();
      state.versionChanged = true;
    }
    state.version = model.model_version;
    setText("version-changed", state.versionChanged
      ? "changed at " + clock(state.versionSince) + " (was " + integer(state.previousVersion) + ")"
      : "unchanged since " + clock(state.versionSince));
    setText("count-decisions", integer(counts.decisions));
    setText("count-rewards", integer(counts.rewards));
    setText("count-pending", integer(counts.pending));
    setText("count-expired", integer(counts.expired));
  }

  function renderRates() {
    var since = nowS() - WINDOW_S;
    var recent = state.decisions.filter(function (t) { return t > since; }).length;
    var rewards = state.rewards.filter(function (r) { return r[0] > since; });
    setText("decisions-per-second", fixed(recent / WINDOW_S, 2));
    setText("reward-rate", rewards.length
      ? fixed(rewards.reduce(function (s, r) { return s + r[1]; }, 0) / rewards.length, 3) : "–");
    var data = series();
    chart("rate", "chart-rate", "decisions/s", "#2f6fdf", [data.xs, data.rate], 1);
    chart("reward", "chart-reward", "mean reward", "#1a8a4a", [data.xs, data.reward], 1);
  }

  function renderLatest() {
    var body = $("latest-decisions").querySelector("tbody");
    body.replaceChildren();
    $("no-decisions").hidden = state.latest.length > 0;
    state.latest.forEach(function (event) {
      var row = document.createElement("tr");
      // shadow mode: the action shown is the client's default; the policy's own choice follows
      var shown = event.policy_action == null ? String(event.action)
        : event.action + " (policy: " + event.policy_action + ")";
      [clock(event.timestamp), event.decision_id, shown, integer(event.model_version)]
        .forEach(function (text, i) {
          var cell = document.createElement("td");
          cell.textContent = text;
          if (i === 1) { cell.className = "id"; }
          row.appendChild(cell);
        });
      var cell = document.createElement("td");
      var box = document.createElement("div");
      box.className = "probs";
      (event.probabilities || []).map(function (p, a) { return [a, p]; })
        .sort(function (x, y) { return y[1] - x[1]; }).slice(0, 5)
        .forEach(function (pair) {
          var item = document.createElement("span");
          var mine = event.policy_action == null ? event.action : event.policy_action;
          item.className = "prob" + (pair[0] === mine ? " chosen" : "");
          var bar = document.createElement("span");
          bar.className = "bar";
          bar.style.width = Math.max(1, Math.round(40 * pair[1])) + "px";
          item.appendChild(bar);
          item.appendChild(document.createTextNode(pair[0] + ": " + fixed(pair[1], 2)));
          box.appendChild(item);
        });
      cell.appendChild(box);
      row.appendChild(cell);
      body.appendChild(row);
    });
  }

  // the latest decision made with "explain": true (GET /v1/model's explanation): the chosen
  // action and the runner-up, their predicted reward, interval, bonus and top features
  var shownExplanation = null;  // the JSON of what the panel shows: redrawn only on a change
  function renderExplanation(latest) {
    $("explanation-empty").hidden = !!latest;
    $("explanation-body").hidden = !latest;
    if (!latest) { return; }
    var shown = JSON.stringify(latest);
    if (shown === shownExplanation) { return; }
    shownExplanation = shown;
    var e = latest.explanation;
    setText("explanation-id", latest.decision_id);
    setText("explanation-version", integer(latest.model_version));
    var level = e.interval_level == null ? "" : " " + percent(e.interval_level).replace(".0%", "%");
    setText("explanation-summary", e.kind === "unscored" ? "not scored: " + e.reason
      : e.policy + " · " + (e.interval ? e.interval + level + " interval" : (e.reason || "no interval"))
        + (e.chosen_is_best ? "" : " · the chosen action was explored"));
    var body = $("explanation-table").querySelector("tbody");
    body.textContent = "";
    [["chosen", e.chosen], ["runner-up", e.runner_up]].forEach(function (pair) {
      var part = pair[1];
      if (!part) { return; }
      var row = document.createElement("tr");
      var features = part.contributions.map(function (c) {
        return c.name + " " + (c.value >= 0 ? "+" : "") + fixed(c.value, 3);
      }).join(", ");
      // a named decide's candidates have ids: "cup-final (row 1)"; else the row
      var action = part.action_id == null ? String(part.action)
        : part.action_id + " (row " + part.action + ")";
      [pair[0], action, fixed(part.predicted_reward, 3),
       part.interval ? interval(part.interval[0], part.interval[1]) : "–",
       fixed(part.bonus, 3) + (part.bonus_share == null ? "" : " (" + percent(part.bonus_share) + ")"),
       fixed(part.index, 3), features].forEach(function (text, i) {
        var cell = document.createElement(i === 0 ? "th" : "td");
        cell.textContent = text;
        row.appendChild(cell);
      });
      body.appendChild(row);
    });
  }

  // the drift monitor's windows (GET /v1/model's drift): the model's mean prediction against
  // the mean reward it got; an alarm says the latest window moved away from the one before
  function renderDrift(drift) {
    $("drift-empty").hidden = !!drift;
    $("drift-body").hidden = !drift;
    if (!drift) { return; }
    var verdict = $("drift-state");
    verdict.textContent = drift.alarm ? "drift detected"
      : (drift.statistic == null ? "collecting windows" : "no drift detected");
    verdict.className = drift.alarm ? "verdict-bad" : (drift.statistic == null ? "" : "verdict-good");
    setText("drift-z", drift.statistic == null ? "–" : fixed(Math.abs(drift.statistic), 2));
    setText("drift-threshold", fixed(drift.threshold, 2));
    setText("drift-alarms", integer(drift.alarms));
    setText("drift-observed", integer(drift.observed));
    setText("drift-last-alarm", drift.last_alarm_at == null ? "no alarm yet"
      : "last alarm after " + integer(drift.last_alarm_at) + " rewards"
        + (drift.action === "restart" ? " (the estimate restarted)" : ""));
    var observed = drift.history_observed || [], predicted = drift.history_predicted || [];
    if (observed.length === 0) { return; }
    var xs = observed.map(function (_, i) { return i - observed.length + 1; });
    var data = [xs, observed, predicted];
    var width = Math.max(300, $("chart-drift").clientWidth);
    if (charts.drift === null) {
      charts.drift = new uPlot({
        width: width, height: 200, padding: [12, 28, 0, 0],
        scales: {x: {time: false}, y: {range: fromZero(1)}},
        series: [{label: "window (0 = latest)"},
                 {label: "observed", stroke: "#1a8a4a", width: 2},
                 {label: "predicted", stroke: "#2f6fdf", width: 2, dash: [6, 4]}],
        axes: [{}, {size: 50}]
      }, data, $("chart-drift"));
    } else {
      charts.drift.setSize({width: width, height: 200});
      charts.drift.setData(data);
    }
  }

  function renderEvaluation(evaluation) {
    var ready = evaluation && evaluation.policy_dr && evaluation["default"];
    $("evaluation-empty").hidden = !!ready;
    $("evaluation-body").hidden = !ready;
    if (!ready) {
      setText("evaluation-empty", (evaluation && evaluation.reason)
        ? "No shadow-mode evaluation: " + evaluation.reason + "."
        : "No shadow-mode evaluation available.");
      return;
    }
    var dr = evaluation.policy_dr, snips = evaluation.policy_snips, lift = evaluation.lift_dr;
    setText("eval-default", fixed(evaluation["default"].value));
    setText("eval-default-ci", interval(evaluation["default"].ci_low, evaluation["default"].ci_high));
    setText("eval-dr", fixed(dr.value));
    setText("eval-dr-ci", interval(dr.ci_low, dr.ci_high));
    setText("eval-dr-note", evaluation.dr_unbiased ? "unbiased: the client randomised"
      : "model-based: " + percent(evaluation.model_share) + " of the policy's mass rests on the reward model");
    setText("eval-snips", snips ? fixed(snips.value) : "–");
    setText("eval-snips-ci", snips ? interval(snips.ci_low, snips.ci_high) : "–");
    setText("eval-snips-note", evaluation.snips_unbiased ? "consistent"
      : "biased: averages only the rounds where the policy agrees with the default");
    setText("eval-lift", fixed(lift.value));
    setText("eval-lift-ci", interval(lift.ci_low, lift.ci_high));
    var verdict = $("eval-verdict");
    var caveat = evaluation.dr_unbiased ? "" : " (if the reward model holds)";
    if (lift.ci_low > 0) { verdict.textContent = "going live would likely help" + caveat; verdict.className = "verdict-good"; }
    else if (lift.ci_high < 0) { verdict.textContent = "going live would likely hurt" + caveat; verdict.className = "verdict-bad"; }
    else { verdict.textContent = "no clear difference yet"; verdict.className = "verdict-unclear"; }
    var bounds = evaluation.value_bounds;
    setText("eval-bounds", bounds ? "policy value in " + interval(bounds[0], bounds[1]) : "– (reward range unknown)");
    setText("eval-rounds", integer(evaluation.n_rounds));
    setText("eval-agreement", percent(evaluation.agreement));
    setText("eval-model-share", percent(evaluation.model_share));
    var poor = dr.diagnostics && dr.diagnostics.poor;
    var overlap = $("eval-overlap");
    overlap.textContent = poor ? "poor" : "ok";
    overlap.className = poor ? "badge" : "";
    var notes = $("eval-notes");
    notes.replaceChildren();
    (evaluation.notes || []).forEach(function (note) {
      var item = document.createElement("li");
      item.textContent = note;
      notes.appendChild(item);
    });
  }

  // -- the polling loop ----------------------------------------------------------------
  function setStatus(text, kind) {
    var status = $("status");
    status.textContent = text;
    status.className = "status" + (kind ? " " + kind : "");
  }

  function wrongKey() {
    generation += 1;
    key = null;
    clearTimeout(timer);
    Object.keys(charts).forEach(function (name) { if (charts[name]) { charts[name].destroy(); charts[name] = null; } });
    $("dashboard").innerHTML = pristine;   // no data stays in the page
    $("dashboard").hidden = true;
    $("login").hidden = false;
    $("auth-error").hidden = false;
    setStatus("wrong key", "bad");
  }

  function poll(mine) {
    var more = false;
    Promise.all([getJSON("/v1/model"), getEvents(state.lastSeq), getJSON("/v1/evaluation", true)])
      .then(function (results) {
        more = results[1].length >= EVENTS_PAGE;
        if (mine !== generation) { return; }
        $("login").hidden = true;
        $("auth-error").hidden = true;
        $("dashboard").hidden = false;
        renderModel(results[0]);
        renderDrift(results[0].drift);
        renderExplanation(results[0].explanation);
        absorb(results[1]);
        renderRates();
        renderLatest();
        renderEvaluation(results[2]);
        setStatus("connected · updated " + clock(nowS()), "ok");
      })
      .catch(function (error) {
        if (mine !== generation) { return; }
        if (error instanceof AuthError) { wrongKey(); return; }
        setStatus("connection lost (" + error.message + "); retrying", "bad");
      })
      .then(function () {
        if (mine === generation) { timer = setTimeout(function () { poll(mine); }, more ? 0 : POLL_MS); }
      });
  }

  $("key-form").addEventListener("submit", function (event) {
    event.preventDefault();
    var input = $("api-key");
    if (!input.value) { return; }
    key = input.value;
    input.value = "";
    generation += 1;
    clearTimeout(timer);
    state = freshState();
    setStatus("connecting…");
    poll(generation);
  });

  window.addEventListener("resize", function () { if (state) { renderRates(); } });
})();
