-- Sightline for Neovim: starts `sightline serve` for Python buffers and adds what plain LSP
-- does not show by itself: the profile status (statusline component), the commands, and the
-- cost hints (native inlay hints on Neovim >= 0.10, end-of-line virtual text below that).
--
--   require("sightline").setup({
--     cmd = { "/path/to/sightline", "serve" },        -- default: sightline on PATH
--     settings = { profiles = { "runs/*.sqlite" } },   -- the server's `sightline` settings
--   })
--
-- Works on Neovim 0.7 (vim.lsp.start_client), 0.8-0.10 (vim.lsp.start) and >= 0.11
-- (vim.lsp.config / vim.lsp.enable with lsp/sightline.lua). The server does the work; this
-- file only moves requests and results between it and the editor.
local M = {}

local defaults = {
  cmd = { "sightline", "serve" },
  filetypes = { "python" },
  root_markers = { "pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", ".git" },
  settings = {},
  hints = {
    enabled = true,
    -- true: always draw hints as end-of-line virtual text (the fallback below 0.10).
    virtual_text = false,
  },
  view = {
    -- How :SightlineView opens the page it writes: a function(path), else vim.ui.open (0.10+),
    -- else xdg-open / open.
    open = nil,
  },
}

local opts = vim.deepcopy(defaults)
local ns = vim.api.nvim_create_namespace("sightline_hints")
local statuses = {} -- client id -> last sightline/profileStatus
local hints_on = true
local started = {} -- root dir -> client id (Neovim < 0.8)
local pending = {} -- bufnr -> true while a hint refresh is scheduled

local function has(version)
  return vim.fn.has("nvim-" .. version) == 1
end

local function native_hints()
  return not opts.hints.virtual_text and vim.lsp.inlay_hint ~= nil and type(vim.lsp.inlay_hint.enable) == "function"
end

-- client:request on >= 0.11, client.request before.
local function request(client, method, params, handler, bufnr)
  if has("0.11") then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

local function all_clients()
  local list
  if vim.lsp.get_clients then
    list = vim.lsp.get_clients({ name = "sightline" })
  else
    list = vim.tbl_filter(function(c)
      return c.name == "sightline"
    end, vim.lsp.get_active_clients())
  end
  return list
end

-- The sightline client attached to `bufnr` (else any running one).
local function client_for(bufnr)
  local any
  for _, c in ipairs(all_clients()) do
    if c.attached_buffers and c.attached_buffers[bufnr] then
      return c
    end
    any = any or c
  end
  return any
end

local function notify(message, level)
  vim.notify("sightline: " .. message, level or vim.log.levels.INFO)
end

local function label_text(label)
  if type(label) == "string" then
    return label
  end
  local parts = {}
  for _, part in ipairs(label or {}) do
    parts[#parts + 1] = part.value
  end
  return table.concat(parts)
end

--- Hints drawn as virtual text: asks the server for the buffer's hints and puts each at the
--- end of its line. Used below Neovim 0.10 (or with hints.virtual_text = true).
function M.refresh_hints(bufnr)
  if bufnr == nil or bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  if native_hints() or not vim.api.nvim_buf_is_loaded(bufnr) then
    return
  end
  if not hints_on then
    vim.api.nvim_buf_clear_namespace(bufnr, ns, 0, -1)
    return
  end
  local client = client_for(bufnr)
  if not client or not (client.attached_buffers and client.attached_buffers[bufnr]) then
    return
  end
  local last = vim.api.nvim_buf_line_count(bufnr)
  local tick = vim.api.nvim_buf_get_changedtick(bufnr)
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = { start = { line = 0, character = 0 }, ["end"] = { line = last, character = 0 } },
  }
  request(client, "textDocument/inlayHint", params, function(err, result)
    if err or not vim.api.nvim_buf_is_loaded(bufnr) then
      return
    end
    if vim.api.nvim_buf_get_changedtick(bufnr) ~= tick then
      return -- the text moved on; the refresh scheduled by that change draws them
    end
    vim.api.nvim_buf_clear_namespace(bufnr, ns, 0, -1)
    if not hints_on then
      return
    end
    local count = vim.api.nvim_buf_line_count(bufnr)
    for _, hint in ipairs(result or {}) do
      local line = hint.position.line
      if line < count then
        vim.api.nvim_buf_set_extmark(bufnr, ns, line, 0, {
          virt_text = { { " " .. label_text(hint.label), "SightlineHint" } },
          virt_text_pos = "eol",
          hl_mode = "combine",
        })
      end
    end
  end, bufnr)
end

local function schedule_refresh(bufnr, delay)
  if pending[bufnr] then
    return
  end
  pending[bufnr] = true
  vim.defer_fn(function()
    pending[bufnr] = nil
    M.refresh_hints(bufnr)
  end, delay or 150)
end

local function refresh_all()
  for _, c in ipairs(all_clients()) do
    for bufnr, _ in pairs(c.attached_buffers or {}) do
      schedule_refresh(bufnr, 0)
    end
  end
end

local function set_native(bufnr, enable)
  if has("0.10") then
    pcall(vim.lsp.inlay_hint.enable, enable, { bufnr = bufnr })
  end
end

--- Handler of the server's sightline/profileStatus notification.
function M.on_profile_status(_, result, ctx)
  statuses[ctx.client_id] = result
  if result and result.loaded == false and result.error and result.error ~= "" then
    notify(result.error, vim.log.levels.WARN)
  end
  refresh_all()
  vim.cmd("redrawstatus")
end

local function on_attach(client, bufnr)
  if client.name ~= "sightline" then
    return
  end
  if native_hints() then
    set_native(bufnr, hints_on and opts.hints.enabled)
    return
  end
  local group = vim.api.nvim_create_augroup("sightline_hints_" .. bufnr, { clear = true })
  vim.api.nvim_create_autocmd({ "TextChanged", "InsertLeave", "BufEnter" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      schedule_refresh(bufnr)
    end,
  })
  schedule_refresh(bufnr, 0)
end

local function capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.workspace = caps.workspace or {}
  -- The virtual-text hints follow the server's refresh requests too.
  caps.workspace.inlayHint = caps.workspace.inlayHint or { refreshSupport = true }
  caps.window = caps.window or {}
  caps.window.workDoneProgress = true
  return caps
end

local handlers = {
  ["sightline/profileStatus"] = M.on_profile_status,
  ["workspace/inlayHint/refresh"] = function(err, result, ctx, config)
    if native_hints() and vim.lsp.handlers["workspace/inlayHint/refresh"] then
      return vim.lsp.handlers["workspace/inlayHint/refresh"](err, result, ctx, config)
    end
    refresh_all()
    return vim.NIL
  end,
}

local function find_root(path)
  local dir = vim.fn.fnamemodify(path, ":p:h")
  while dir and dir ~= "" do
    for _, marker in ipairs(opts.root_markers) do
      if vim.loop.fs_stat(dir .. "/" .. marker) then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ":h")
    if parent == dir then
      break
    end
    dir = parent
  end
  return vim.fn.fnamemodify(path, ":p:h")
end

--- The client configuration for a workspace root (also what lsp/sightline.lua is merged with).
function M.client_config(root)
  return {
    name = "sightline",
    cmd = opts.cmd,
    root_dir = root,
    settings = { sightline = opts.settings },
    init_options = { settings = opts.settings },
    capabilities = capabilities(),
    handlers = handlers,
    on_attach = on_attach,
  }
end

-- Starts (or reuses) the server for a buffer on Neovim < 0.11.
local function start(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" or vim.bo[bufnr].buftype ~= "" then
    return
  end
  local root = find_root(name)
  if vim.lsp.start then -- 0.8 - 0.10
    vim.api.nvim_buf_call(bufnr, function()
      vim.lsp.start(M.client_config(root))
    end)
    return
  end
  local id = started[root] -- 0.7
  if not id or not vim.lsp.get_client_by_id(id) or vim.lsp.get_client_by_id(id).is_stopped() then
    id = vim.lsp.start_client(M.client_config(root))
    if not id then
      notify("could not start " .. table.concat(opts.cmd, " "), vim.log.levels.ERROR)
      return
    end
    started[root] = id
  end
  vim.lsp.buf_attach_client(bufnr, id)
end

-- A request to the current buffer's server; `on_result` gets the result, errors are told as
-- "`label`: message".
local function server_request(method, params, label, on_result)
  local bufnr = vim.api.nvim_get_current_buf()
  local client = client_for(bufnr)
  if not client then
    notify("the server is not running (open a Python file first)", vim.log.levels.WARN)
    return
  end
  request(client, method, params, function(err, result)
    if err then
      notify(label .. ": " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    elseif on_result then
      on_result(result)
    end
  end, bufnr)
end

local function execute(command, arguments, on_result)
  server_request("workspace/executeCommand", { command = command, arguments = arguments }, command, on_result)
end

local function scratch(lines, filetype, name)
  vim.cmd("botright new")
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  pcall(vim.api.nvim_buf_set_name, buf, name)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = filetype
  return buf
end

--- :SightlineLoad {file}
function M.load(path)
  execute("sightline.loadProfile", { vim.fn.fnamemodify(vim.fn.expand(path), ":p") })
end

--- :SightlineReload
function M.reload()
  execute("sightline.reloadProfiles", {})
end

--- :SightlineSummary: the loaded profile's summary (markdown) in a scratch buffer.
function M.summary()
  execute("sightline.showProfileSummary", {}, function(markdown)
    scratch(vim.split(type(markdown) == "string" and markdown or vim.inspect(markdown), "\n"), "markdown",
      "sightline://summary")
  end)
end

--- :SightlineProfileCommand: the nsys lines that profile the current script.
function M.profile_command()
  execute("sightline.profileWithNsys", { vim.uri_from_bufnr(0) }, function(r)
    local lines = { "# run in " .. (r.cwd or ".") }
    vim.list_extend(lines, r.commands or {})
    if r.note and r.note ~= "" then
      vim.list_extend(lines, { "", "# " .. r.note })
    end
    scratch(lines, "sh", "sightline://nsys")
  end)
end

local function open_file(path)
  if opts.view.open then
    return opts.view.open(path)
  end
  if vim.ui and vim.ui.open then
    return vim.ui.open(path)
  end
  local opener = vim.fn.has("mac") == 1 and "open" or "xdg-open"
  if vim.fn.executable(opener) == 1 then
    vim.fn.jobstart({ opener, path }, { detach = true })
  else
    notify("step view written to " .. path .. " (open it in a browser)")
  end
end

--- :SightlineView: the step view (steps, a steady step's timeline, memory, top lines and the
--- open scripts' hot lines) as one self-contained HTML page, written to Neovim's cache folder
--- and opened in the browser. Returns nothing; the page's path is notified.
function M.view()
  server_request("sightline/stepView", { format = "html" }, "step view", function(result)
    if type(result) ~= "table" or type(result.html) ~= "string" then
      notify("no profile is loaded", vim.log.levels.WARN)
      return
    end
    local dir = vim.fn.stdpath("cache") .. "/sightline"
    vim.fn.mkdir(dir, "p")
    local path = dir .. "/step-view.html"
    local file = io.open(path, "wb")
    if not file then
      notify("cannot write " .. path, vim.log.levels.ERROR)
      return
    end
    file:write(result.html)
    file:close()
    M.last_view = path
    open_file(path)
  end)
end

--- How :SightlineView opens its page from now on (a function(path)); tests record it.
function M.setup_view_opener(open)
  opts.view.open = open
end

--- :SightlineHints: shows or hides the cost hints.
function M.toggle_hints()
  hints_on = not hints_on
  for _, c in ipairs(all_clients()) do
    for bufnr, _ in pairs(c.attached_buffers or {}) do
      if native_hints() then
        set_native(bufnr, hints_on)
      elseif hints_on then
        M.refresh_hints(bufnr)
      else
        vim.api.nvim_buf_clear_namespace(bufnr, ns, 0, -1)
      end
    end
  end
  notify(hints_on and "hints on" or "hints off")
  return hints_on
end

--- The last profile status of the current buffer's server (nil before one arrived).
function M.status()
  local client = client_for(vim.api.nvim_get_current_buf())
  return client and statuses[client.id] or nil
end

--- Statusline component: "▮ naive.sqlite · 5.53 ms/step · 100%" ("" without a server).
function M.statusline()
  local s = M.status()
  if not s then
    return ""
  end
  if not s.loaded then
    return "▮ no profile"
  end
  -- The server words the line and formats its figures (the VS Code status bar shows the same).
  local text = "▮ " .. (s.text or vim.fn.fnamemodify(s.file or "", ":t"))
  if s.warnings and #s.warnings > 0 then
    text = text .. " ⚠ " .. #s.warnings
  end
  return text
end

--- The virtual-text namespace (tests read the extmarks in it).
M.namespace = ns

local function define_commands()
  local command = vim.api.nvim_create_user_command
  command("SightlineLoad", function(a)
    M.load(a.args)
  end, { nargs = 1, complete = "file", desc = "Load a profile (.nsys-rep, .sqlite, .pt.trace.json[.gz])" })
  command("SightlineReload", M.reload, { desc = "Reload the profiles" })
  command("SightlineSummary", M.summary, { desc = "Show the loaded profile's summary" })
  command("SightlineHints", M.toggle_hints, { desc = "Show or hide the GPU cost hints" })
  command("SightlineProfileCommand", M.profile_command, { desc = "The nsys commands that profile this script" })
  command("SightlineView", M.view, { desc = "Open the step view (steps, timeline, memory, top lines) in a browser" })
  -- The lens on the training loop runs this client-side command.
  vim.lsp.commands["sightline.stepView"] = function()
    M.view()
  end
end

--- Starts the server for Python buffers and defines the commands.
function M.setup(user)
  opts = vim.tbl_deep_extend("force", vim.deepcopy(defaults), user or {})
  hints_on = opts.hints.enabled
  vim.cmd("highlight default link SightlineHint Comment")
  define_commands()
  local group = vim.api.nvim_create_augroup("sightline", { clear = true })
  if vim.lsp.config and vim.lsp.enable then -- >= 0.11: lsp/sightline.lua plus these fields
    local config = M.client_config(nil)
    config.root_dir = nil
    config.name = nil
    config.filetypes = opts.filetypes
    config.root_markers = opts.root_markers
    vim.lsp.config("sightline", config)
    vim.lsp.enable("sightline")
    return
  end
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = opts.filetypes,
    callback = function(args)
      start(args.buf)
    end,
  })
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do -- buffers opened before setup
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.tbl_contains(opts.filetypes, vim.bo[bufnr].filetype) then
      start(bufnr)
    end
  end
end

return M
