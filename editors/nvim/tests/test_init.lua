-- Headless Neovim test of the plugin against the real server (run by run.sh):
--   nvim --headless -u editors/nvim/tests/test_init.lua
-- Environment: SIGHTLINE_BIN (the server binary), SIGHTLINE_NVIM (editors/nvim),
-- SIGHTLINE_WORKSPACE (holds train_small.py and train_small_naive.sqlite).
-- Opens the script as a user would, waits for the server, and checks what the user sees:
-- diagnostics (codes and lines), the hover window, a code action applied to the buffer, the
-- hints drawn as virtual text (Neovim < 0.10 has no inlay hints), the commands and the
-- statusline. Exits 0 when every check passed.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":h") .. "/harness.lua")
local bin, workspace = H.bin, H.workspace
local log, check, wait = H.log, H.check, H.wait

local sightline = require("sightline")
sightline.setup({
  cmd = { bin, "serve" },
  settings = { profiles = { "train_small_naive.sqlite" } },
  -- Neovim 0.7/0.9 draw hints as virtual text anyway; force it so the check is the same on all.
  hints = { virtual_text = true },
})

local function run()
  vim.cmd("cd " .. vim.fn.fnameescape(workspace))
  vim.cmd("edit " .. vim.fn.fnameescape(workspace .. "/train_small.py"))
  local buf = vim.api.nvim_get_current_buf()
  check(vim.bo[buf].filetype == "python", "python filetype")

  -- The profile loads and its status reaches the statusline component.
  check(wait(60000, function()
    local s = sightline.status()
    return s ~= nil and s.loaded == true
  end), "profile status arrives", vim.inspect(sightline.status()))
  local line = sightline.statusline()
  check(line:find("train_small_naive.sqlite", 1, true) and line:find("ms/step", 1, true), "statusline", line)
  -- The line is the server's words: no figure formatted in the plugin. Its ms/step is the
  -- status's gpuNsPerStep by the rule of tests/data/units.json (three significant figures), the
  -- rule checked first against that table.
  local s = sightline.status()
  check(line:sub(1, #("▮ " .. s.text)) == "▮ " .. s.text, "statusline is the server's status text", line)
  local function format_milliseconds(ns)
    local v = ns / 1e6
    local a = math.abs(v)
    return string.format(a >= 100 and "%.0f" or a >= 10 and "%.1f" or "%.2f", v)
  end
  local units = vim.fn.json_decode(table.concat(vim.fn.readfile(vim.fn.fnamemodify(H.plugin, ":p:h:h:h") .. "/tests/data/units.json"), "\n"))
  local table_ok = true
  for _, row in ipairs(units.milliseconds) do
    -- printf rounds an exact tie to even, the table away from zero: ties are the server's to get right.
    if format_milliseconds(row[1]) ~= row[2] and math.abs(row[1] / 1e4 - math.floor(row[1] / 1e4) - 0.5) > 1e-9 then
      table_ok = false
    end
  end
  check(table_ok, "the test's rule writes tests/data/units.json's milliseconds")
  check(line:find(" " .. format_milliseconds(s.gpuNsPerStep) .. " ms/step", 1, true) ~= nil, "statusline's ms/step by the units table",
    line .. " vs " .. format_milliseconds(s.gpuNsPerStep))

  -- Diagnostics, with the profile's evidence: (0-based line, code).
  local wanted = {
    { 86, "dataloader-pin-memory" },
    { 86, "dataloader-num-workers" },
    { 101, "missing-non-blocking" },
    { 101, "pageable-memcpy" },
    { 101, "gpu-idle" },
    { 108, "sync-in-loop" },
  }
  local function has_all()
    local seen = {}
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      seen[d.lnum .. ":" .. tostring(d.code)] = d
    end
    for _, w in ipairs(wanted) do
      if not seen[w[1] .. ":" .. w[2]] then
        return false, seen
      end
    end
    return true, seen
  end
  wait(30000, function()
    return (has_all())
  end)
  local ok, seen = has_all()
  local listed = {}
  for key, _ in pairs(seen) do
    listed[#listed + 1] = key
  end
  table.sort(listed)
  check(ok, "diagnostics by line and code", table.concat(listed, " "))
  local item = seen["108:sync-in-loop"]
  check(item and item.message:find("measured", 1, true), "the .item() diagnostic cites measured time",
    item and item.message)

  -- Hints as end-of-line virtual text; the hot line (33) carries milliseconds.
  local function hint_on(lnum)
    return H.hint_on(buf, sightline.namespace, lnum)
  end
  wait(10000, function()
    return hint_on(32) ~= nil
  end)
  local hint = hint_on(32)
  check(hint and hint:find("ms", 1, true), "virtual-text hint on line 33", hint)

  -- Hover on the hot line: the floating window shows the cost card with its kernels.
  vim.api.nvim_win_set_cursor(0, { 33, 20 })
  vim.lsp.buf.hover()
  local hover_text
  wait(10000, function()
    for _, win in ipairs(vim.api.nvim_list_wins()) do
      if vim.api.nvim_win_get_config(win).relative ~= "" then
        hover_text = table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false), "\n")
        return true
      end
    end
  end)
  check(hover_text and hover_text:find("ms", 1, true) and hover_text:lower():find("kernel", 1, true),
    "hover window with the line's kernels", hover_text)
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= "" then
      vim.api.nvim_win_close(win, true)
    end
  end

  -- A code action through the real menu: the pin_memory quick fix on the DataLoader line.
  local offered = {}
  vim.ui.select = function(items, select_opts, on_choice)
    for i, it in ipairs(items) do
      local title = select_opts.format_item and select_opts.format_item(it) or tostring(it)
      offered[#offered + 1] = title
      if title:find("pin_memory=True", 1, true) and not title:find("non_blocking", 1, true) then
        on_choice(it, i)
        return
      end
    end
    on_choice(nil, nil)
  end
  local loader_line = vim.api.nvim_buf_get_lines(buf, 86, 87, false)[1]
  vim.api.nvim_win_set_cursor(0, { 87, loader_line:find("DataLoader", 1, true) + 1 })
  vim.lsp.buf.code_action()
  wait(10000, function()
    return vim.api.nvim_buf_get_lines(buf, 86, 87, false)[1]:find("pin_memory=True", 1, true) ~= nil
  end)
  local fixed = vim.api.nvim_buf_get_lines(buf, 86, 87, false)[1]
  check(fixed:find("pin_memory=True", 1, true), "code action edits the buffer",
    fixed .. " | offered: " .. table.concat(offered, "; "))
  -- The server sees the edit: the pin_memory finding goes away.
  check(wait(10000, function()
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      if d.code == "dataloader-pin-memory" then
        return false
      end
    end
    return true
  end), "the fixed finding disappears")

  -- An inserted line above moves the hints down with their lines.
  local def_hint, hot_hint = hint_on(31), hint_on(32) -- def forward (Σ) and its return line
  vim.api.nvim_buf_set_lines(buf, 0, 0, false, { "# a new first line" })
  vim.cmd("doautocmd TextChanged")
  check(wait(10000, function()
    return hint_on(33) == hot_hint and hint_on(32) == def_hint
  end), "hints follow an inserted line", tostring(hint_on(32)) .. " / " .. tostring(hint_on(33)))

  -- :SightlineHints hides them and shows them again.
  vim.cmd("SightlineHints")
  check(#vim.api.nvim_buf_get_extmarks(buf, sightline.namespace, 0, -1, {}) == 0, ":SightlineHints hides hints")
  vim.cmd("SightlineHints")
  check(wait(10000, function()
    return hint_on(33) ~= nil
  end), ":SightlineHints shows them again")

  -- :SightlineSummary opens a markdown scratch buffer.
  vim.cmd("SightlineSummary")
  wait(10000, function()
    return vim.bo.filetype == "markdown"
  end)
  local summary = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  check(vim.bo.filetype == "markdown" and summary:find("train_small_naive.sqlite", 1, true), ":SightlineSummary",
    summary:sub(1, 200))
  vim.cmd("close")

  -- :SightlineView writes the step view page and opens it (here: records the path).
  local opened = nil
  sightline.setup_view_opener(function(path)
    opened = path
  end)
  vim.cmd("SightlineView")
  check(wait(20000, function()
    return opened ~= nil
  end), ":SightlineView opens a page", tostring(opened))
  local page = opened and table.concat(vim.fn.readfile(opened), "\n") or ""
  check(page:find("<!doctype html>", 1, true) == 1 and page:find("sightline-data", 1, true)
    and page:find("return F.relu(self.bn(self.conv(x)))", 1, true), ":SightlineView's page holds the data and the hot lines",
    page:sub(1, 120))

  -- :SightlineLoad loads a profile by path: a fresh status arrives.
  local before = sightline.status()
  vim.cmd("SightlineLoad train_small_naive.sqlite")
  check(wait(60000, function()
    local s = sightline.status()
    return s ~= before and s.loaded == true
  end), ":SightlineLoad loads the profile again")

  H.finish()
end

H.start(run, 120000)
