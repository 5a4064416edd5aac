-- Headless Neovim test of a memory snapshot (run by run.sh after test_init.lua):
--   nvim --headless -u editors/nvim/tests/test_memory.lua
-- Environment: SIGHTLINE_BIN, SIGHTLINE_NVIM, SIGHTLINE_WORKSPACE (holds gpt_mem.py and
-- oom_snapshot.pickle, dumped when the run ran out of memory in evaluation). Checks what the
-- user sees: the out-of-memory error on its line, the bytes held at the peak as a hint, and
-- the memory summary in the statusline. Exits 0 when every check passed.
local bin = assert(os.getenv("SIGHTLINE_BIN"), "SIGHTLINE_BIN")
local plugin = assert(os.getenv("SIGHTLINE_NVIM"), "SIGHTLINE_NVIM")
local workspace = assert(os.getenv("SIGHTLINE_WORKSPACE"), "SIGHTLINE_WORKSPACE")

vim.opt.runtimepath:prepend(plugin)
vim.opt.swapfile = false
vim.opt.shortmess:append("F")
vim.cmd("filetype on")

local failures = 0
local function log(text)
  io.stderr:write(text .. "\n")
end
local function check(ok, what, detail)
  if ok then
    log("ok   " .. what)
  else
    failures = failures + 1
    log("FAIL " .. what .. (detail and (": " .. detail) or ""))
  end
  return ok
end

vim.defer_fn(function()
  log("FAIL timed out")
  vim.cmd("cquit 2")
end, 90000)

local sightline = require("sightline")
sightline.setup({
  cmd = { bin, "serve" },
  settings = { profiles = { "oom_snapshot.pickle" } },
  hints = { virtual_text = true },
})

local function run()
  vim.cmd("cd " .. vim.fn.fnameescape(workspace))
  vim.cmd("edit " .. vim.fn.fnameescape(workspace .. "/gpt_mem.py"))
  local buf = vim.api.nvim_get_current_buf()
  check(vim.wait(60000, function()
    local s = sightline.status()
    return s ~= nil and s.loaded == true
  end, 50), "snapshot status arrives", vim.inspect(sightline.status()))
  local line = sightline.statusline()
  check(line:find("peak 63.54 GiB · out of memory at gpt_mem.py:73", 1, true), "statusline names the peak", line)

  local oom
  vim.wait(30000, function()
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      if d.code == "out-of-memory" then
        oom = d
      end
    end
    return oom ~= nil
  end, 50)
  check(oom and oom.lnum == 72 and oom.severity == vim.diagnostic.severity.ERROR, "out-of-memory error on line 73",
    oom and vim.inspect({ oom.lnum, oom.severity, oom.message }))
  check(oom and oom.message:find("asked 24.56 GiB with 14.16 GiB free", 1, true), "the error says asked and free",
    oom and oom.message)

  local function hint_on(lnum)
    local marks = vim.api.nvim_buf_get_extmarks(buf, sightline.namespace, { lnum, 0 }, { lnum, -1 }, { details = true })
    for _, m in ipairs(marks) do
      if m[4] and m[4].virt_text then
        return m[4].virt_text[1][1]
      end
    end
  end
  vim.wait(10000, function()
    return hint_on(59) ~= nil
  end, 50)
  local hint = hint_on(59)
  check(hint and hint:find("25.71 GiB at peak", 1, true), "memory hint on the logits line (60)", hint)

  log(failures == 0 and "all checks passed" or (failures .. " check(s) failed"))
  vim.cmd(failures == 0 and "qall!" or "cquit 1")
end

vim.api.nvim_create_autocmd("VimEnter", {
  callback = function()
    vim.schedule(function()
      local ok, err = pcall(run)
      if not ok then
        log("FAIL error: " .. tostring(err))
        vim.cmd("cquit 3")
      end
    end)
  end,
})
