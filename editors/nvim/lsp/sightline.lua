-- Sightline for Neovim >= 0.11, in the nvim-lspconfig shape:
--   vim.opt.runtimepath:append("/path/to/sightline/editors/nvim")
--   vim.lsp.enable("sightline")
-- Override any field with vim.lsp.config("sightline", {...}). require("sightline").setup{}
-- does the same and adds the commands, the statusline component and the hint toggle.
return {
  cmd = { "sightline", "serve" },
  filetypes = { "python" },
  root_markers = { "pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", ".git" },
  -- Answered to the server's workspace/configuration request (section "sightline"); see
  -- docs/editors.md for every key.
  settings = { sightline = {} },
  handlers = {
    ["sightline/profileStatus"] = function(err, result, ctx, config)
      return require("sightline").on_profile_status(err, result, ctx, config)
    end,
  },
}
