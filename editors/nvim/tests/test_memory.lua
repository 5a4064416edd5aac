-- Headless Neovim test of a memory snapshot (run by run.sh after test_init.lua):
--   nvim --headless -u editors/nvim/tests/test_memory.lua
-- Environment: SIGHTLINE_BIN, SIGHTLINE_NVIM, SIGHTLINE_WORKSPACE (holds gpt_mem.py and
-- oom_snapshot.pickle, dumped when the run ran out of memory in evaluation). Checks what the
-- user sees: the out-of-memory error on its line, the bytes held at the peak as a hint, and
-- the memory summary in the statusline. Exits 0 when every check passed.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":h") .. "/harness.lua")
local check = H.check

local sightline = require("sightline")
sightline.setup({
  cmd = { H.bin, "serve" },
  settings = { profiles = { "oom_snapshot.pickle" } },
  hints = { virtual_text = true },
})

local function run()
  vim.cmd("cd " .. vim.fn.fnameescape(H.workspace))
  vim.cmd("edit " .. vim.fn.fnameescape(H.workspace .. "/gpt_mem.py"))
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
    return H.hint_on(buf, sightline.namespace, lnum)
  end
  vim.wait(10000, function()
    return hint_on(59) ~= nil
  end, 50)
  local hint = hint_on(59)
  check(hint and hint:find("25.71 GiB at peak", 1, true), "memory hint on the logits line (60)", hint)

  H.finish()
end

H.start(run, 90000)
