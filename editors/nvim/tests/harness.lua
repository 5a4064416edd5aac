-- What the headless Neovim tests share (loaded by test_init.lua and test_memory.lua through
-- dofile): the environment run.sh sets, logging and checks, the plugin's virtual-text hints,
-- and running a test once Neovim has started (failing if it hangs or raises).
local H = {}

H.bin = assert(os.getenv("SIGHTLINE_BIN"), "SIGHTLINE_BIN")
H.plugin = assert(os.getenv("SIGHTLINE_NVIM"), "SIGHTLINE_NVIM")
H.workspace = assert(os.getenv("SIGHTLINE_WORKSPACE"), "SIGHTLINE_WORKSPACE")

vim.opt.runtimepath:prepend(H.plugin)
vim.opt.swapfile = false
vim.opt.shortmess:append("F")
vim.cmd("filetype on")

H.failures = 0
function H.log(text)
  io.stderr:write(text .. "\n")
end
function H.check(ok, what, detail)
  if ok then
    H.log("ok   " .. what)
  else
    H.failures = H.failures + 1
    H.log("FAIL " .. what .. (detail and (": " .. detail) or ""))
  end
  return ok
end
function H.wait(ms, condition)
  return vim.wait(ms, condition, 50)
end

-- The hint the plugin drew at the end of 0-based line `lnum`, or nil.
function H.hint_on(buf, namespace, lnum)
  local marks = vim.api.nvim_buf_get_extmarks(buf, namespace, { lnum, 0 }, { lnum, -1 }, { details = true })
  for _, m in ipairs(marks) do
    if m[4] and m[4].virt_text then
      return m[4].virt_text[1][1]
    end
  end
end

-- Exits with the verdict: 0 when every check passed.
function H.finish()
  H.log(H.failures == 0 and "all checks passed" or (H.failures .. " check(s) failed"))
  vim.cmd(H.failures == 0 and "qall!" or "cquit 1")
end

-- Runs `test` once Neovim has started; gives up (failing) after `timeout_ms`.
function H.start(test, timeout_ms)
  vim.defer_fn(function()
    H.log("FAIL timed out")
    vim.cmd("cquit 2")
  end, timeout_ms)
  vim.api.nvim_create_autocmd("VimEnter", {
    callback = function()
      vim.schedule(function()
        local ok, err = pcall(test)
        if not ok then
          H.log("FAIL error: " .. tostring(err))
          vim.cmd("cquit 3")
        end
      end)
    end,
  })
end

return H
