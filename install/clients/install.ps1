# Installs the paddock CLI of this server's version on Windows:
#
#   irm @URL@/cli/install.ps1 | iex
#
# It downloads paddock-windows-ARCH.exe and SHA256SUMS from the server,
# checks the binary's checksum, installs it as
# %LOCALAPPDATA%\Programs\paddock\paddock.exe and adds that folder to the
# user's PATH. Nothing is installed when a step fails.
& {
    $ErrorActionPreference = 'Stop'
    $url = '@URL@'
    $arch = if ($env:PROCESSOR_ARCHITECTURE -eq 'ARM64') { 'arm64' } else { 'amd64' }
    $name = "paddock-windows-$arch.exe"
    $work = Join-Path ([System.IO.Path]::GetTempPath()) ("paddock-" + [guid]::NewGuid())
    New-Item -ItemType Directory -Path $work | Out-Null
    try {
        Invoke-WebRequest -UseBasicParsing -Uri "$url/cli/SHA256SUMS" -OutFile (Join-Path $work 'SHA256SUMS')
        Invoke-WebRequest -UseBasicParsing -Uri "$url/cli/$name" -OutFile (Join-Path $work $name)
        $want = $null
        foreach ($line in Get-Content (Join-Path $work 'SHA256SUMS')) {
            $f = $line -split '\s+'
            if ($f.Count -ge 2 -and ($f[1] -eq $name -or $f[1] -eq "*$name")) { $want = $f[0].ToLower() }
        }
        if (-not $want) { throw "SHA256SUMS has no checksum for $name" }
        $got = (Get-FileHash -Algorithm SHA256 (Join-Path $work $name)).Hash.ToLower()
        if ($got -ne $want) { throw "$name`: checksum mismatch (got $got, want $want); nothing was installed" }
        $dir = Join-Path $env:LOCALAPPDATA 'Programs\paddock'
        New-Item -ItemType Directory -Force -Path $dir | Out-Null
        Move-Item -Force (Join-Path $work $name) (Join-Path $dir 'paddock.exe')
        $path = [Environment]::GetEnvironmentVariable('Path', 'User')
        if (-not (($path -split ';') -contains $dir)) {
            [Environment]::SetEnvironmentVariable('Path', (($path, $dir) -ne '' -join ';'), 'User')
            $env:Path = "$env:Path;$dir"
        }
        Write-Host "installed $dir\paddock.exe"
        Write-Host "next:  paddock login $url"
    } finally {
        Remove-Item -Recurse -Force $work -ErrorAction SilentlyContinue
    }
}
